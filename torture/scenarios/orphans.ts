/**
 * Orphan hunts: after every way a session or the server can end (stdin close, SIGTERM, SIGINT,
 * session/close, session/delete, SIGKILL then a restart), no process the server started may be
 * left: neither a command that ignores SIGTERM nor a background job of a command that finished,
 * nor a job that left the command's process group and session (`setsid`), ignoring SIGTERM too.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { pollUntil } from "../../tests/_helpers/wait.ts";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { hunt, killAll, waitForProcess } from "../../tests/_helpers/marked_processes.ts";
import { type Server, writeScript } from "../driver.ts";

const ENDINGS = [
  "stdin-close",
  "SIGTERM",
  "SIGINT",
  "session/close",
  "session/delete",
  "SIGKILL+restart",
] as const;

/**
 * Starts `setsid sh -c '<inner>'` in the background and writes its pid to `job.pid` once it has
 * a process group of its own (before, the command's group kill would still reach it).
 */
const SETSID_JOB = `setsid sh -c 'trap "" TERM; sleep 300; exit 0' >/dev/null 2>&1 & p=$!
while [ "$(cut -d' ' -f5 /proc/$p/stat)" != "$p" ]; do sleep 0.01; done; echo $p > job.pid`;

const COMMANDS = {
  /** Still running when the ending comes; ignores SIGTERM (and so does its sleep). */
  "ignores-TERM": 'trap "" TERM; sleep 300',
  /**
   * The command ends at once and leaves a background job (it writes the job's pid, so the hunt
   * knows the job really started).
   */
  "background-job": "sleep 300 >/dev/null 2>&1 & echo $! > job.pid",
  /** The command ends at once and leaves a job in a session of its own, ignoring SIGTERM. */
  "setsid-job": SETSID_JOB,
  /** Still running when the ending comes, with a job in a session of its own; both ignore TERM. */
  "setsid-running": `${SETSID_JOB}; trap "" TERM; sleep 300`,
} as const;

/** The commands that end at once, leaving a job behind. */
const ENDS_AT_ONCE: ReadonlySet<string> = new Set(["background-job", "setsid-job"]);

/** The server's process supervisor (src/host/process_guard.ts), by its command line. */
const SUPERVISOR = /acp-harness-supervisor/;

/** How long processes may take to go after the ending (bounded poll). */
const GONE_WITHIN_MS = 5_000;

/** See the module doc. */
export const orphans: Scenario = {
  name: "orphans",
  description:
    "6 endings × {trap '' TERM; sleep 300, sleep 300 &, setsid job ended or running}: none left",
  async run(context: ScenarioContext): Promise<void> {
    const rounds = context.pick(2, 1, 1);
    const cases: Array<[typeof ENDINGS[number], keyof typeof COMMANDS]> = [];
    for (let round = 0; round < rounds; round++) {
      for (const ending of ENDINGS) {
        for (const command of Object.keys(COMMANDS) as Array<keyof typeof COMMANDS>) {
          cases.push([ending, command]);
        }
      }
    }
    // A few at once: they mostly wait.
    const parallel = 4;
    for (let start = 0; start < cases.length; start += parallel) {
      await Promise.all(
        cases.slice(start, start + parallel).map(([ending, command], offset) =>
          oneCase(context, ending, command, start + offset)
        ),
      );
    }
  },
};

async function oneCase(
  context: ScenarioContext,
  ending: typeof ENDINGS[number],
  command: keyof typeof COMMANDS,
  index: number,
): Promise<void> {
  const label = `${command} / ${ending}`;
  const dir = join(context.base, `case-${index}`);
  const cwd = join(dir, "ws");
  const dataDir = join(dir, "data");
  await mkdir(cwd, { recursive: true });
  const script = await writeScript(dir, "script.json", [
    { toolCalls: [{ name: "run_command", arguments: { command: COMMANDS[command] } }] },
    { text: "done" },
  ]);
  const args = ["--mode", "auto", "--model", "scripted", "--script", script];
  const marker = context.newMarker();
  const server = context.start({ dataDir, cwd: dir, args, marker });
  await server.initialize();
  const sessionId = await server.newSession(cwd);
  const prompt = server.promptRequest(sessionId, "start it");
  await server.write(prompt.frame);
  context.run();
  if (ENDS_AT_ONCE.has(command)) {
    // The command ends at once: let the turn end, then its job must be gone already (the server
    // ends what a command leaves in its group when the command exits).
    if ((await server.response(prompt.id, 10_000)) === undefined) {
      context.fail("other", "hang", `${label}: the turn did not end after the command did`);
    }
    if (!existsSync(join(cwd, "job.pid"))) {
      context.fail("other", "no-command", `${label}: the command never started its job`);
      return;
    }
    const early = await hunt(marker, GONE_WITHIN_MS, [server.pid], SUPERVISOR);
    if (early.length > 0) {
      context.fail(
        "leftovers",
        `${label} (after the command)`,
        `${label}: ${early.map(({ pid, command }) => `${pid} ${command}`).join("; ")}`,
        early.length,
      );
      killAll(early);
    }
  } else if (!(await waitForProcess(marker, /sleep 300/, 10_000))) {
    context.fail("other", "no-command", `${label}: the command never started`);
    return;
  } else if (command === "setsid-running" && !(await jobStarted(cwd))) {
    context.fail("other", "no-command", `${label}: the command never started its job`);
    return;
  }
  let except: number[] = [];
  let restarted: Server | undefined;
  switch (ending) {
    case "stdin-close":
      server.end();
      break;
    case "SIGTERM":
    case "SIGINT":
      server.kill(ending);
      break;
    case "session/close":
    case "session/delete": {
      const answer = await server.call(ending, { sessionId }, 15_000);
      if (answer === undefined || "error" in answer) {
        context.fail("other", "ending-failed", `${label}: ${JSON.stringify(answer)}`);
      }
      except = [server.pid];
      break;
    }
    case "SIGKILL+restart": {
      server.kill("SIGKILL");
      await server.exited;
      // A later start on the same data directory must clean up what the killed one left.
      restarted = context.start({ dataDir, cwd: dir, args, marker: context.newMarker() });
      await restarted.initialize();
      await restarted.call("session/list", {}, 10_000);
      break;
    }
  }
  if (except.length === 0 && !restarted) {
    if (!(await server.exitWithin(10_000))) {
      context.fail("other", "slow-exit", `${label}: the server did not exit within 10 s`);
      server.kill("SIGKILL");
      await server.exited;
    }
    context.checkCrash(server, label);
  }
  // While the server lives, its process supervisor is part of it, not a leftover.
  const left = await hunt(
    marker,
    GONE_WITHIN_MS,
    except,
    except.length === 0 ? undefined : SUPERVISOR,
  );
  if (left.length > 0) {
    context.fail(
      "leftovers",
      label,
      `${label}: ${left.map(({ pid, command }) => `${pid} ${command}`).join("; ")}`,
      left.length,
    );
    killAll(left);
  }
  if (restarted) await restarted.stop();
  if (!server.exit) await server.stop();
}

/** Waits (bounded) for the command's `job.pid`: the job has left the command's group by then. */
async function jobStarted(cwd: string): Promise<boolean> {
  // Written by the command, a process that is not ours: no event to wait on.
  return await pollUntil(() => existsSync(join(cwd, "job.pid")), {
    what: "the command's job.pid",
    timeoutMs: 10_000,
  }).then(() => true, () => false);
}
