/**
 * The command sandbox end to end on Deno, Node.js and Bun: a real server with the scripted model
 * in `--mode auto` runs commands that try to get out (writes outside the roots, into `~/.ssh`,
 * into the data directory, through a symlink, a hard link and `/proc/self/root`; connections to
 * a listener on 127.0.0.1 and by name; a fork bomb; a process that outlives its command), and
 * ones that must work (writes inside the roots, under `/tmp`). Under `--sandbox workspace-write`
 * every escape is refused or killed; the same commands under `--sandbox off` get out, so the
 * checks can fail.
 *
 * The paths to get out to lie under `/var/tmp`, not the tests' temporary root: that is under
 * `/tmp`, which the sandbox replaces with a private one, so an escape there would be refused for
 * the wrong reason.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { bwrapAvailable } from "../_helpers/bwrap.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

const available = bwrapAvailable();

/** Where a run's files are. */
interface Paths {
  /** The session's cwd, under the tests' temporary root (so under /tmp). */
  readonly ws: string;
  /** A directory outside every root, visible (read-only) inside the sandbox. */
  readonly outside: string;
  readonly home: string;
  readonly data: string;
}

/** A command the model runs, and what a contained run must show. */
interface Probe {
  readonly name: string;
  readonly command: (paths: Paths, port: number) => string;
  /** Whether the command got out (checked on the host after it ran). */
  readonly escaped: (paths: Paths, run: Run) => Promise<boolean>;
}

/** What a server run observed. */
interface Run {
  /** The tool results' texts, by probe name. */
  readonly results: Map<string, string>;
  /** Connections the loopback listener accepted, by probe name. */
  readonly connections: Map<string, number>;
  /** Whether the outliving sleeper was running after its command had ended. */
  readonly outlived: boolean;
}

const SLEEPER = `${987_000 + Math.floor(Math.random() * 1000)}`;

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

const PROBES: readonly Probe[] = [
  {
    name: "write outside the roots",
    command: ({ outside }) => `echo x > ${outside}/written`,
    escaped: ({ outside }) => exists(join(outside, "written")),
  },
  {
    name: "write into ~/.ssh",
    command: () => "echo key >> ~/.ssh/authorized_keys",
    escaped: async ({ home }) =>
      (await readFile(join(home, ".ssh/authorized_keys"), "utf8").catch(() => "")).includes("key"),
  },
  {
    name: "read ~/.ssh",
    command: () => "cat ~/.ssh/id_ed25519",
    escaped: (_paths, run) =>
      Promise.resolve((run.results.get("read ~/.ssh") ?? "").includes("SECRET")),
  },
  {
    name: "write into the data directory",
    command: ({ data }) => `echo x > ${data}/planted`,
    escaped: ({ data }) => exists(join(data, "planted")),
  },
  {
    name: "write through a symlink",
    command: ({ ws }) => `echo x > ${ws}/out-link/via-symlink`,
    escaped: ({ outside }) => exists(join(outside, "via-symlink")),
  },
  {
    name: "write through a new hard link",
    command: ({ ws, outside }) => `ln ${outside}/victim ${ws}/hard && echo changed >> ${ws}/hard`,
    escaped: async ({ outside }) =>
      (await readFile(join(outside, "victim"), "utf8")).includes("changed"),
  },
  {
    name: "write via /proc/self/root",
    command: ({ outside }) => `echo x > /proc/self/root${outside}/via-proc`,
    escaped: ({ outside }) => exists(join(outside, "via-proc")),
  },
  {
    name: "connect to 127.0.0.1",
    command: (_paths, port) => `curl -sS -m 5 http://127.0.0.1:${port}/`,
    escaped: (_paths, run) =>
      Promise.resolve((run.connections.get("connect to 127.0.0.1") ?? 0) > 0),
  },
  {
    name: "connect by name",
    command: (_paths, port) => `curl -sS -m 5 http://localhost:${port}/`,
    escaped: (_paths, run) => Promise.resolve((run.connections.get("connect by name") ?? 0) > 0),
  },
  {
    name: "fork bomb",
    // 400 sleeps; each one started is counted in the workspace (a shell that cannot fork ends).
    command: ({ ws }) => `for i in $(seq 400); do sleep 30 & echo x >> ${ws}/started; done`,
    escaped: async ({ ws }) => {
      const started = (await readFile(join(ws, "started"), "utf8").catch(() => "")).length / 2;
      return started > 100;
    },
  },
  {
    name: "outlive the command",
    // Orphaned, out of the process group and without the server's marker: only the sandbox
    // ends it.
    // The command ends once the sleeper runs (before, the server's sweep could catch it still
    // carrying the server's marker).
    command: () =>
      `(env -i setsid sleep ${SLEEPER} > /dev/null 2>&1 &); ` +
      `for i in $(seq 200); do pgrep -xf "sleep ${SLEEPER}" > /dev/null && break; sleep 0.05; done; ` +
      "echo started",
    escaped: (_paths, run) => Promise.resolve(run.outlived),
  },
];

/** The commands that must work inside the sandbox as well. */
const WORKING = "echo inside > inside.txt && mkdir -p sub && echo deep > sub/f && cat sub/f";

/** The pids of the sleepers the outliving probe started. */
async function sleepers(): Promise<number[]> {
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const line = await readFile(`/proc/${entry.name}/cmdline`, "utf8").catch(() => "");
    if (line.replaceAll("\0", " ").trim() === `sleep ${SLEEPER}`) found.push(Number(entry.name));
  }
  return found;
}

/**
 * Whether the sleeper lives on after its command ended, told while the server still runs: under
 * the sandbox it is gone at once (bounded wait for the kernel to reap it); without, it shows up.
 */
async function outlivedCommand(level: "workspace-write" | "off"): Promise<boolean> {
  const want = level === "off";
  try {
    await pollUntil(async () => ((await sleepers()).length > 0) === want, {
      what: want ? "the unsandboxed sleeper to show up" : "the sandboxed sleeper to be gone",
      timeoutMs: 5000,
    });
    return want;
  } catch {
    return !want;
  }
}

/** A loopback listener that counts the connections it accepts, by the probe that made them. */
function countingListener(): {
  port: number;
  current: { probe: string };
  run: Run["connections"];
  close(): void;
} {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const connections = new Map<string, number>();
  const current = { probe: "" };
  void (async () => {
    for await (const conn of listener) {
      connections.set(current.probe, (connections.get(current.probe) ?? 0) + 1);
      conn.close();
    }
  })().catch(() => {});
  return {
    port: listener.addr.port,
    current,
    run: connections,
    close: () => listener.close(),
  };
}

/** Lays out the files: a workspace, an outside directory with a victim, a HOME with `.ssh`. */
async function layout(base: string, outside: string): Promise<Paths> {
  const ws = join(base, "ws");
  const home = join(outside, "home");
  const data = join(outside, "data");
  await mkdir(ws);
  await mkdir(join(home, ".ssh"), { recursive: true });
  await mkdir(data);
  await writeFile(join(home, ".ssh/id_ed25519"), "SECRET KEY\n");
  await writeFile(join(home, ".ssh/authorized_keys"), "");
  await writeFile(join(outside, "victim"), "original\n");
  await symlink(outside, join(ws, "out-link"));
  return { ws, outside, home, data };
}

/** Runs every probe, then the working commands, as one scripted prompt per probe. */
async function runProbes(
  runtime: Runtime,
  paths: Paths,
  level: "workspace-write" | "off",
): Promise<Run> {
  const listener = countingListener();
  const results = new Map<string, string>();
  let outlived = false;
  const steps = [...PROBES.map((probe) => probe.command(paths, listener.port)), WORKING];
  const script = join(paths.ws, "..", `script-${level}.json`);
  await writeFile(
    script,
    JSON.stringify(steps.flatMap((command) => [
      { toolCalls: [{ name: "run_command", arguments: { command } }] },
      { text: "next" },
    ])),
  );
  const agent: StdioAgent = spawnAgent(runtime.command, [
    ...runtime.args,
    ...["--model", "scripted", "--script", script, "--mode", "auto"],
    ...["--data-dir", paths.data, "--sandbox", level, "--sandbox-pids", "64"],
  ], {
    cwd: paths.ws,
    env: { ...Deno.env.toObject(), HOME: paths.home, ACP_HARNESS_DELEGATION_DEPTH: "" },
  });
  try {
    await agent.client.initialize();
    const { sessionId } = await agent.client.request("session/new", {
      cwd: paths.ws,
      mcpServers: [],
    }) as { sessionId: string };
    for (const [index, command] of steps.entries()) {
      const name = PROBES[index]?.name ?? "working";
      listener.current.probe = name;
      const before = agent.client.updates(sessionId).length;
      await agent.client.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text: `run ${command}` }],
      });
      const texts = agent.client.updates(sessionId).slice(before).flatMap(({ update }) => {
        const u = update as { sessionUpdate: string; status?: string; content?: unknown };
        return u.sessionUpdate === "tool_call_update" &&
            (u.status === "completed" || u.status === "failed")
          ? [JSON.stringify(u.content)]
          : [];
      });
      results.set(name, texts.join("\n"));
      if (name === "outlive the command") outlived = await outlivedCommand(level);
    }
  } finally {
    agent.end();
    await exitWithin(agent, 15_000).catch(() => {});
    listener.close();
  }
  return { results, connections: listener.run, outlived };
}

for (const runtime of RUNTIMES) {
  Deno.test({
    name:
      `${runtime.name}: --sandbox workspace-write refuses or kills every escape; --sandbox off lets each out`,
    ignore: !available,
    async fn() {
      await using dir = await tempDir("acp-harness-sandbox-");
      for (const level of ["workspace-write", "off"] as const) {
        const outside = await mkdtemp("/var/tmp/acp-harness-sandbox-");
        try {
          await mkdir(join(dir.path, level));
          const paths = await layout(join(dir.path, level), outside);
          const run = await runProbes(runtime, paths, level);
          const escapes: string[] = [];
          for (const probe of PROBES) {
            if (await probe.escaped(paths, run)) escapes.push(probe.name);
          }
          const working = run.results.get("working") ?? "";
          assert.match(working, /Exit code: 0/, `the working commands at ${level}: ${working}`);
          assert.equal(await readFile(join(paths.ws, "inside.txt"), "utf8"), "inside\n");
          if (level === "workspace-write") {
            assert.deepEqual(
              escapes,
              [],
              `escapes under the sandbox: ${JSON.stringify([...run.results])}`,
            );
            assert.match(
              run.results.get("write outside the roots") ?? "",
              /No such file|Read-only/,
            );
            assert.match(
              run.results.get("write through a symlink") ?? "",
              /\[sandbox workspace-write:/,
            );
            assert.match(
              run.results.get("connect to 127.0.0.1") ?? "",
              /\[sandbox workspace-write:/,
            );
            assert.match(run.results.get("fork bomb") ?? "", /\[sandbox workspace-write:/);
          } else {
            assert.deepEqual(
              PROBES.map((probe) => probe.name).filter((name) => !escapes.includes(name)),
              [],
              `probes that did not get out without the sandbox: ${
                JSON.stringify([...run.results])
              }`,
            );
          }
        } finally {
          for (const pid of await sleepers()) process.kill(pid, "SIGKILL");
          await rm(outside, { recursive: true, force: true });
        }
      }
    },
  });
}
