/**
 * Three `serve --http` instances (Deno, Node.js, Bun, in that order) on one fresh PostgreSQL
 * database, for the tests that put a load balancer in front of them (tests/deploy): one scripted
 * model, one token, a short lease, a workspace they share. Disposing kills what is left of them
 * (SIGKILL, after whatever the test did) and removes the database and the files.
 *
 * @module
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { listeningUrl, spawnAgent, type StdioAgent } from "./acp_client.ts";
import { withTestDatabase } from "./postgres.ts";
import { RUNTIMES } from "./runtimes.ts";
import { tempDir } from "./temp_dir.ts";

/** How the instances run. */
export interface InstancesOptions {
  /** The scripted model's steps (`--script`), the same for every instance. */
  readonly script: readonly unknown[];
  /** The bearer token (`--token`). */
  readonly token: string;
  /** `--lease-ttl`, in seconds. */
  readonly leaseTtl: string;
}

/** The running instances. */
export interface Instances extends AsyncDisposable {
  /** The workspace (the sessions' cwd). */
  readonly cwd: string;
  /** The instances: Deno, Node.js, Bun. */
  readonly agents: readonly StdioAgent[];
  /** Their `http://127.0.0.1:<port>` URLs, in the same order. */
  readonly urls: readonly string[];
}

/**
 * Starts the three instances and waits until each listens.
 *
 * @param options The script, the token and the lease
 * @returns The instances
 */
export async function startInstances(options: InstancesOptions): Promise<Instances> {
  const dir = await tempDir("acp-harness-instances-");
  const database = await withTestDatabase();
  const cwd = join(dir.path, "ws");
  const agents: StdioAgent[] = [];
  const dispose = async (): Promise<void> => {
    for (const agent of agents) {
      if (agent.child.exitCode === null && agent.child.signalCode === null) {
        agent.child.kill("SIGKILL");
      }
    }
    await Promise.all(agents.map((agent) => agent.exited));
    try {
      await database[Symbol.asyncDispose]();
    } finally {
      await dir[Symbol.asyncDispose]();
    }
  };
  try {
    await mkdir(cwd);
    const script = join(dir.path, "script.json");
    await writeFile(script, JSON.stringify(options.script));
    for (const [i, runtime] of RUNTIMES.entries()) {
      agents.push(spawnAgent(runtime.command, [
        ...runtime.args,
        "serve",
        "--http",
        "--port",
        "0",
        "--token",
        options.token,
        "--store",
        database.url,
        "--data-dir",
        join(dir.path, `data-${i}`),
        "--lease-ttl",
        options.leaseTtl,
        "--model",
        "scripted",
        "--script",
        script,
      ], { cwd, env: { ...Deno.env.toObject(), NO_COLOR: "1" } }));
    }
    const urls = await Promise.all(agents.map(listeningUrl));
    return { cwd, agents, urls, [Symbol.asyncDispose]: dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}
