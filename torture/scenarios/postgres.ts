/**
 * PostgreSQL under a hostile environment, on a private cluster this scenario starts (and removes):
 * an instance SIGKILLed the moment a prompt is answered, then a takeover by a second instance
 * after the lease; the database frozen (SIGSTOP) during a turn with a `write_file`; the database
 * stopped (`pg_ctl stop -m immediate`) and started again during a turn. Nothing answered may be
 * missing from the log another instance loads, no answer may come while the database is frozen,
 * and a frozen turn's tool must not run before its call is stored.
 *
 * Needs `ACP_HARNESS_TEST_POSTGRES` (as in CI), for the machine's PostgreSQL binaries; without it
 * the scenario counts one run and checks nothing.
 *
 * @module
 */
import { execFile } from "node:child_process";
import { mkdir, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import process from "node:process";
import { promisify } from "node:util";
import type { Scenario, ScenarioContext } from "../context.ts";
import { ROOT, type Server, writeScript } from "../driver.ts";
import { load, missing } from "./kill.ts";
import { pollUntil } from "../../tests/_helpers/wait.ts";

const run = promisify(execFile);
const SCRIPT = join(ROOT, "scripts/postgres_test_server.sh");

/** A PostgreSQL cluster of this scenario only: started, frozen, stopped and removed here. */
export class PrivateCluster {
  readonly dir: string;
  readonly url: string;

  private constructor(dir: string, url: string) {
    this.dir = dir;
    this.url = url;
  }

  /** Starts one in `dir` (created), with a database `acp_torture` for the instances. */
  static async start(dir: string): Promise<PrivateCluster> {
    const { stdout } = await run("sh", [SCRIPT, "start", dir], { timeout: 120_000 });
    const server = new URL(stdout.trim().split("\n").at(-1) ?? "");
    await run(`${await binDir()}/psql`, [
      "-h",
      server.hostname,
      "-p",
      server.port,
      "-U",
      "acp",
      "-d",
      "postgres",
      "-c",
      "CREATE DATABASE acp_torture",
    ], { timeout: 60_000 });
    server.pathname = "/acp_torture";
    return new PrivateCluster(dir, server.href);
  }

  /** The postmaster, then its children (each in a session of its own, so no process group). */
  async #processes(): Promise<number[]> {
    const text = await readFile(join(this.dir, "data/postmaster.pid"), "utf8");
    const postmaster = Number(text.split("\n")[0]);
    const children: number[] = [];
    for (const entry of await readdir("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
      // pid (comm) state ppid …: the command may hold spaces and parentheses.
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === postmaster) children.push(Number(entry));
    }
    return [postmaster, ...children];
  }

  /** Freezes every process of the cluster (SIGSTOP), or thaws them (SIGCONT). */
  async signal(signal: "SIGSTOP" | "SIGCONT"): Promise<void> {
    for (const pid of await this.#processes()) process.kill(pid, signal);
  }

  /** `pg_ctl stop -m immediate` (a crash as far as the data goes), or start it again. */
  async pgCtl(action: "stop" | "start"): Promise<void> {
    const port = new URL(this.url).port;
    const bin = await binDir();
    const args = action === "stop" ? ["-D", `${this.dir}/data`, "-m", "immediate", "-w", "stop"] : [
      "-D",
      `${this.dir}/data`,
      "-l",
      `${this.dir}/server.log`,
      "-w",
      "-t",
      "30",
      "-o",
      `-h 127.0.0.1 -p ${port} -k ${this.dir} -c fsync=off -c max_connections=300 -c autovacuum=off`,
      "start",
    ];
    const asOwner = process.getuid?.() === 0;
    await run(asOwner ? "runuser" : `${bin}/pg_ctl`, [
      ...(asOwner ? ["-u", "postgres", "--", `${bin}/pg_ctl`] : []),
      ...args,
    ], { timeout: 60_000 });
  }

  /** Thaws it (in case), stops it and removes its directory. */
  async remove(): Promise<void> {
    await this.signal("SIGCONT").catch(() => {});
    await run("sh", [SCRIPT, "stop", this.dir], { timeout: 60_000 }).catch(() => {});
  }
}

/** Where the PostgreSQL binaries are (as `scripts/postgres_test_server.sh` finds them). */
async function binDir(): Promise<string> {
  if (process.env.PG_BIN) return process.env.PG_BIN;
  const { stdout } = await run("sh", [
    "-c",
    "pg_config --bindir 2>/dev/null || ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1",
  ]);
  return stdout.trim().split("\n").at(-1) ?? "";
}

/** The stop reason of an answer, or `error`/`none`. */
function outcome(answer: Record<string, unknown> | undefined): string {
  if (answer === undefined) return "none";
  if ("error" in answer) return "error";
  return String((answer.result as { stopReason?: unknown } | undefined)?.stopReason);
}

/** Loads the session in `server`, retrying while a dead instance's lease lives. */
async function takeOver(
  server: Server,
  sessionId: string,
  cwd: string,
): Promise<Array<Record<string, unknown>> | undefined> {
  let replayed: Array<Record<string, unknown>> | undefined;
  // The lease's expiry is the state waited for; each load asks whether it came.
  await pollUntil(async () => (replayed = await load(server, sessionId, cwd)) !== undefined, {
    what: "the dead instance's lease to expire",
    timeoutMs: 20_000,
    intervalMs: 250,
  }).catch(() => {});
  return replayed;
}

/** SIGKILL the moment `end_turn` arrives, then a second instance takes the session over. */
async function killAfterAnswer(context: ScenarioContext, url: string, rounds: number) {
  const script = await writeScript(context.base, "answer.json", [
    { text: "The first answer." },
    { thought: "Then write.", text: "Writing.", toolCalls: [writeCall("kill.txt")] },
    { text: "The acknowledged answer." },
  ]);
  const after = await writeScript(context.base, "after.json", [{ text: "Continuing." }]);
  for (let n = 0; n < rounds; n++) {
    const dir = join(context.base, `kill-${n}`);
    const cwd = join(dir, "ws");
    await mkdir(cwd, { recursive: true });
    const args = ["--store", url, "--lease-ttl", "1", "--mode", "auto", "--model", "scripted"];
    const first = context.start({
      dataDir: join(dir, "a"),
      cwd: dir,
      args: [...args, "--script", script],
    });
    await first.initialize();
    const sessionId = await first.newSession(cwd);
    const prompts = [`first ${n}`, `second ${n}`];
    const ids: number[] = [];
    for (const prompt of prompts) {
      const request = first.promptRequest(sessionId, prompt);
      ids.push(request.id);
      await first.write(request.frame);
      await first.waitFor(() => first.responseIndex(request.id) !== -1, 20_000);
    }
    // The moment the second answer is in: no time for anything after it.
    first.kill("SIGKILL");
    await first.exited;
    context.run();
    const answered = prompts.filter((_, index) => first.responseIndex(ids[index] ?? -1) !== -1);
    const live = first.updates(sessionId);
    const second = context.start({
      dataDir: join(dir, "b"),
      cwd: dir,
      args: [...args, "--script", after],
    });
    await second.initialize();
    const replayed = await takeOver(second, sessionId, cwd);
    if (replayed === undefined) {
      context.fail(
        "other",
        "takeover-failed",
        `round ${n}: no takeover: ${second.stderr.slice(-300)}`,
      );
    } else {
      const lost = missing(live, answered, replayed);
      if (lost.length > 0) {
        context.fail("lost", "kill-after-answer", `round ${n}: ${lost.join(", ")}`, lost.length);
      }
    }
    await second.stop();
    context.checkCrash(second, `kill round ${n}`);
  }
}

function writeCall(path: string): { name: string; arguments: Record<string, string> } {
  return { name: "write_file", arguments: { path, content: "written" } };
}

/** Starts an instance on `url` with a session that answered one prompt. */
async function readySession(
  context: ScenarioContext,
  name: string,
  url: string,
  steps: unknown[],
  extra: readonly string[],
): Promise<{ server: Server; sessionId: string; cwd: string; dir: string }> {
  const dir = join(context.base, name);
  const cwd = join(dir, "ws");
  await mkdir(cwd, { recursive: true });
  const script = await writeScript(context.base, `${name}.json`, [{ text: "Ready." }, ...steps]);
  const server = context.start({
    dataDir: join(dir, "data"),
    cwd: dir,
    args: ["--store", url, "--mode", "auto", "--model", "scripted", "--script", script, ...extra],
  });
  await server.initialize();
  const sessionId = await server.newSession(cwd);
  const ready = server.promptRequest(sessionId, "ready?");
  await server.write(ready.frame);
  if (outcome(await server.response(ready.id, 20_000)) !== "end_turn") {
    throw new Error(`${name}: the first prompt failed: ${server.stderr.slice(-300)}`);
  }
  return { server, sessionId, cwd, dir };
}

/** Closes the session and loads it again in the same instance; then a prompt must end well. */
async function reload(
  context: ScenarioContext,
  where: string,
  server: Server,
  sessionId: string,
  cwd: string,
): Promise<Array<Record<string, unknown>> | undefined> {
  await server.call("session/close", { sessionId }, 30_000);
  const replayed = await load(server, sessionId, cwd);
  if (replayed === undefined) {
    context.fail(
      "other",
      "load-failed",
      `${where}: session/load failed: ${server.stderr.slice(-300)}`,
    );
    return undefined;
  }
  const next = server.promptRequest(sessionId, "after the store came back");
  await server.write(next.frame);
  const ended = outcome(await server.response(next.id, 30_000));
  if (ended !== "end_turn") {
    context.fail("other", "no-recovery", `${where}: the prompt after the reload: ${ended}`);
  }
  return replayed;
}

/** The database frozen during a turn: no answer until the commit timeout, and then an error. */
async function frozen(context: ScenarioContext, cluster: PrivateCluster): Promise<void> {
  const { server, sessionId, cwd } = await readySession(context, "frozen", cluster.url, [
    { text: "Writing while frozen.", toolCalls: [writeCall("frozen.txt")] },
    { text: "Written." },
    { text: "Recovered." },
  ], ["--store-commit-timeout", "2"]);
  await cluster.signal("SIGSTOP");
  let ended: string;
  try {
    const turn = server.promptRequest(sessionId, "write while frozen");
    await server.write(turn.frame);
    ended = outcome(await server.response(turn.id, 30_000));
  } finally {
    await cluster.signal("SIGCONT");
  }
  context.run();
  if (ended !== "error") {
    context.fail(
      "lost",
      "answered-while-frozen",
      `a turn with the database frozen: ${ended}: ${server.stderr.slice(-600)}`,
    );
  }
  if (await stat(join(cwd, "frozen.txt")).then(() => true, () => false)) {
    context.fail("other", "tool-ran-unstored", "write_file ran before its call was stored");
  }
  await reload(context, "frozen", server, sessionId, cwd);
  await server.stop();
  context.checkCrash(server, "frozen");
}

/** The database stopped and started again during a turn: stored whole, or failed and consistent. */
async function restarted(context: ScenarioContext, cluster: PrivateCluster): Promise<void> {
  const { server, sessionId, cwd } = await readySession(context, "restart", cluster.url, [
    { text: "Writing across a restart.", toolCalls: [writeCall("restart.txt")] },
    { delayMs: 1_500, text: "Done after the restart." },
    { text: "Continuing." },
  ], ["--store-commit-timeout", "20"]);
  const from = server.updates(sessionId).length;
  const turn = server.promptRequest(sessionId, "write across a restart");
  await server.write(turn.frame);
  // Stop the database once the tool ran: its result and the turn's end are still to be written.
  await server.waitFor(
    () => server.updates(sessionId, from).some((update) => update.status === "completed"),
    20_000,
  );
  await cluster.pgCtl("stop");
  // Down until the server has hit the outage (its next append failed and is being retried), not
  // for a fixed time.
  await server.waitFor(
    () => server.stderr.includes("cannot write the session log: retrying"),
    20_000,
  );
  await cluster.pgCtl("start");
  const ended = outcome(await server.response(turn.id, 40_000));
  context.run();
  const live = server.updates(sessionId);
  const answered = ended === "end_turn" ? ["ready?", "write across a restart"] : ["ready?"];
  const replayed = await reload(context, "restart", server, sessionId, cwd);
  if (replayed !== undefined && ended === "end_turn") {
    const lost = missing(live, answered, replayed);
    if (lost.length > 0) context.fail("lost", "db-restart", lost.join(", "), lost.length);
  } else if (ended !== "error" && ended !== "end_turn") {
    context.fail("other", "hang", `the turn across the restart: ${ended}`);
  }
  await server.stop();
  context.checkCrash(server, "restart");
}

/** See the module doc. */
export const postgres: Scenario = {
  name: "postgres",
  description:
    "PostgreSQL killed-after-answer takeover, frozen and restarted mid-turn: nothing answered lost",
  alone: true,
  async run(context: ScenarioContext): Promise<void> {
    if (!process.env.ACP_HARNESS_TEST_POSTGRES) {
      context.run();
      return;
    }
    // Outside the scenario's own directory, which only this user may enter (the cluster runs as
    // the postgres user under root); the script's stop removes it.
    const cluster = await PrivateCluster.start(
      join(tmpdir(), `acp-torture-pg-${crypto.randomUUID().slice(0, 8)}`),
    );
    try {
      await killAfterAnswer(context, cluster.url, context.pick(10, 4, 2));
      await frozen(context, cluster);
      await restarted(context, cluster);
    } finally {
      await context.sweep();
      await cluster.remove();
    }
  },
};
