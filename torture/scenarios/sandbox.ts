/**
 * Sandbox escapes: under `--sandbox workspace-write --mode auto`, the scripted model's commands
 * try to write outside the roots (an absolute path, `~/.ssh`, the data directory, a symlink, a
 * new hard link, `/proc/self/root`), read `~/.ssh`, connect to a listener on 127.0.0.1 and by
 * name, fork 400 processes against `--sandbox-pids 64`, and leave an orphan behind. Each attempt
 * that gets out counts as an escape; the commands that must work (writes inside the workspace,
 * under `/tmp`) count as `other` failures when they do not.
 *
 * @module
 */
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import type { Scenario, ScenarioContext } from "../context.ts";
import { writeScript } from "../driver.ts";

/** Where one round's files are. */
interface Paths {
  readonly ws: string;
  readonly outside: string;
  readonly home: string;
  readonly data: string;
}

/** An escape attempt: its command, and how the host tells that it got out. */
interface Attempt {
  readonly name: string;
  readonly command: (paths: Paths, port: number, sleeper: string) => string;
  readonly escaped: (paths: Paths, seen: Seen) => Promise<boolean>;
}

/** What the scenario saw besides the files. */
interface Seen {
  /** The tool results' texts, joined. */
  readonly output: string;
  /** Connections the loopback listener accepted. */
  readonly connections: number;
  /** Pids of the orphan still running after the turn. */
  readonly orphans: readonly number[];
}

async function exists(path: string): Promise<boolean> {
  return (await stat(path).catch(() => undefined)) !== undefined;
}

const ATTEMPTS: readonly Attempt[] = [
  {
    name: "write-outside",
    command: ({ outside }) => `echo x > ${outside}/written`,
    escaped: ({ outside }) => exists(join(outside, "written")),
  },
  {
    name: "write-ssh",
    command: () => "echo key >> ~/.ssh/authorized_keys",
    escaped: async ({ home }) =>
      (await readFile(join(home, ".ssh/authorized_keys"), "utf8")).includes("key"),
  },
  {
    name: "read-ssh",
    command: () => "cat ~/.ssh/id_ed25519",
    escaped: (_paths, seen) => Promise.resolve(seen.output.includes("SECRET-KEY")),
  },
  {
    name: "write-data-dir",
    command: ({ data }) => `echo x > ${data}/planted`,
    escaped: ({ data }) => exists(join(data, "planted")),
  },
  {
    name: "symlink",
    command: ({ ws }) => `echo x > ${ws}/out-link/via-symlink`,
    escaped: ({ outside }) => exists(join(outside, "via-symlink")),
  },
  {
    name: "hard-link",
    command: ({ ws, outside }) => `ln ${outside}/victim ${ws}/hard && echo changed >> ${ws}/hard`,
    escaped: async ({ outside }) =>
      (await readFile(join(outside, "victim"), "utf8")).includes("changed"),
  },
  {
    name: "proc-root",
    command: ({ outside }) => `echo x > /proc/self/root${outside}/via-proc`,
    escaped: ({ outside }) => exists(join(outside, "via-proc")),
  },
  {
    name: "connect",
    command: (_paths, port) =>
      `curl -sS -m 5 http://127.0.0.1:${port}/; curl -sS -m 5 http://localhost:${port}/`,
    escaped: (_paths, seen) => Promise.resolve(seen.connections > 0),
  },
  {
    name: "fork-bomb",
    command: ({ ws }) => `for i in $(seq 400); do sleep 30 & echo x >> ${ws}/started; done`,
    escaped: async ({ ws }) =>
      (await readFile(join(ws, "started"), "utf8").catch(() => "")).length / 2 > 64,
  },
  {
    name: "orphan",
    command: (_paths, _port, sleeper) =>
      `(env -i setsid sleep ${sleeper} > /dev/null 2>&1 &); ` +
      `for i in $(seq 200); do pgrep -xf "sleep ${sleeper}" > /dev/null && break; sleep 0.05; done`,
    escaped: (_paths, seen) => Promise.resolve(seen.orphans.length > 0),
  },
];

/** The commands that must work in the sandbox. */
const WORKING = "echo in > inside.txt && echo tmp > /tmp/t && cat /tmp/t inside.txt";

/** The pids of processes whose command line is exactly `sleep <sleeper>`. */
async function sleepers(sleeper: string): Promise<number[]> {
  const found: number[] = [];
  for await (const entry of Deno.readDir("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const line = await readFile(`/proc/${entry.name}/cmdline`, "utf8").catch(() => "");
    if (line.replaceAll("\0", " ").trim() === `sleep ${sleeper}`) found.push(Number(entry.name));
  }
  return found;
}

async function layout(base: string, outside: string): Promise<Paths> {
  const paths = {
    ws: join(base, "ws"),
    outside,
    home: join(outside, "home"),
    data: join(outside, "data"),
  };
  await mkdir(paths.ws, { recursive: true });
  await mkdir(join(paths.home, ".ssh"), { recursive: true });
  await mkdir(paths.data, { recursive: true });
  await writeFile(join(paths.home, ".ssh/id_ed25519"), "SECRET-KEY\n");
  await writeFile(join(paths.home, ".ssh/authorized_keys"), "");
  await writeFile(join(outside, "victim"), "original\n");
  await symlink(outside, join(paths.ws, "out-link"));
  return paths;
}

/** See the module doc. */
export const sandbox: Scenario = {
  name: "sandbox",
  description: "commands try to write, read, connect, fork and outlive their way out of bwrap",
  async run(context: ScenarioContext): Promise<void> {
    // Outside /tmp, which the sandbox replaces with a private one.
    const outside = await mkdtemp("/var/tmp/acp-harness-torture-sandbox-");
    const sleeper = `${876_000 + Math.floor(Math.random() * 1000)}`;
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    let connections = 0;
    void (async () => {
      for await (const conn of listener) {
        connections++;
        conn.close();
      }
    })().catch(() => {});
    try {
      const paths = await layout(context.base, outside);
      const commands = [
        ...ATTEMPTS.map((attempt) => attempt.command(paths, listener.addr.port, sleeper)),
        WORKING,
      ];
      const steps = commands.map((command) => ({
        toolCalls: [{ name: "run_command", arguments: { command } }],
      }));
      steps.push({ text: "done" } as never);
      const script = await writeScript(context.base, "script.json", steps);
      const server = context.start({
        dataDir: paths.data,
        cwd: paths.ws,
        env: { HOME: paths.home },
        args: [
          ...["--mode", "auto", "--model", "scripted", "--script", script, "--max-steps", "50"],
          ...["--sandbox", "workspace-write", "--sandbox-pids", "64"],
        ],
      });
      await server.initialize();
      const sessionId = await server.newSession(paths.ws);
      const prompt = server.promptRequest(sessionId, "escape");
      await server.write(prompt.frame);
      const response = await server.response(prompt.id, 120_000);
      if (response === undefined) {
        context.fail("other", "hang", "the turn did not end within 120 s");
        return;
      }
      const results = server.updates(sessionId).filter((update) =>
        update.sessionUpdate === "tool_call_update" &&
        (update.status === "completed" || update.status === "failed")
      ).map((update) => JSON.stringify(update.content));
      const seen: Seen = {
        output: results.join("\n"),
        connections,
        orphans: await sleepers(sleeper),
      };
      context.run(ATTEMPTS.length + 1);
      for (const attempt of ATTEMPTS) {
        if (await attempt.escaped(paths, seen)) {
          context.fail("escapes", attempt.name, `${context.runtime.name}: ${attempt.name} got out`);
        }
      }
      const working = results.at(-1) ?? "";
      if (!/Exit code: 0/.test(working) || !/tmp\\nin/.test(working)) {
        context.fail("other", "working", `the commands inside the sandbox failed: ${working}`);
      }
    } finally {
      listener.close();
      for (const pid of await sleepers(sleeper)) process.kill(pid, "SIGKILL");
      await rm(outside, { recursive: true, force: true });
    }
  },
};
