import { pollUntil } from "../_helpers/wait.ts";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { isAlive, waitGone } from "./_processes.ts";
import { MARK, marked } from "../_helpers/marked_processes.ts";
import { NodeHost } from "../../src/host/node_host.ts";
import type { HostProcess } from "../../src/host/host.ts";
import {
  bootId,
  findOwned,
  groupAlive,
  OwnedScanner,
  ownerVariable,
  ProcessSupervisor,
  procStat,
  reapRecords,
} from "../../src/host/process_guard.ts";
import { makeTempDir, removeTempDir } from "../_helpers/temp_dir.ts";

/** Starts `sleep 300` in its own process group with `env` added; returns its pid. */
function detachedSleep(env: Record<string, string> = {}): number {
  const child = spawn("sleep", ["300"], {
    detached: true,
    stdio: "ignore",
    env: { ...process.env, ...env },
  });
  child.unref();
  return child.pid as number;
}

function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, "SIGKILL");
  } catch {
    // Gone.
  }
}

function killAll(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
}

Deno.test("NodeHost.spawn() kills a background job left in the group when the command exits", async () => {
  const host = new NodeHost();
  const child = await host.spawn("/bin/sh", ["-c", "sleep 300 >/dev/null 2>&1 & echo $!"], {
    cwd: "/",
  });
  const [stdout] = await Promise.all([new Response(child.stdout).text(), child.stderr.cancel()]);
  const job = Number(stdout.trim());
  try {
    assert.deepEqual(await child.exited, { code: 0, signal: null });
    assert.equal(await isAlive(job), false, "gone by the time exited settles");
  } finally {
    killAll([job]);
  }
});

/**
 * Starts `/bin/sh -c` running `script` through `host`, with `mark` in its environment; resolves
 * with the first line it prints and the process (its output drained in the background).
 */
async function spawnPrinting(
  host: NodeHost,
  script: string,
  mark: string,
  signal?: AbortSignal,
): Promise<{ line: string; child: HostProcess; drained: Promise<void> }> {
  const child = await host.spawn("/bin/sh", ["-c", script], {
    cwd: "/",
    env: { [MARK]: mark },
    ...(signal ? { signal } : {}),
  });
  void child.stderr.cancel();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let line = "";
  while (!line.endsWith("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    line += value;
  }
  const drained = (async () => {
    while (!(await reader.read()).done) {
      // What comes after the first line is not needed.
    }
  })();
  return { line: line.trim(), child, drained };
}

/**
 * A shell script that starts `setsid sh -c '<inner>'` (its own session and group), waits until it
 * has left the group (before that, the group kill would reach it), prints its pid, then `tail`.
 */
function setsidScript(inner: string, tail: string): string {
  return `setsid sh -c '${inner}' >/dev/null 2>&1 & p=$!
while [ "$(cut -d' ' -f5 /proc/$p/stat 2>/dev/null)" != "$p" ]; do sleep 0.01; done; echo $p; ${tail}`;
}

Deno.test("NodeHost.spawn(): descendants that called setsid end with their own command, SIGKILL for one ignoring SIGTERM; another command's are untouched", async () => {
  const host = new NodeHost();
  const finished = crypto.randomUUID();
  const running = crypto.randomUUID();
  const abort = new AbortController();
  try {
    // Ends at once, leaving a session of its own that ignores SIGTERM (so does its sleep).
    const first = await spawnPrinting(
      host,
      setsidScript(`trap "" TERM; sleep 300; exit 0`, ""),
      finished,
    );
    // Keeps running, with an escaped sleep of its own.
    const second = await spawnPrinting(
      host,
      setsidScript("sleep 300; exit 0", "wait"),
      running,
      abort.signal,
    );
    assert.equal((await marked(finished)).length, 2, "the escaped shell and its sleep run");
    assert.deepEqual(await first.child.exited, { code: 0, signal: null });
    await first.drained;
    assert.deepEqual(await marked(finished), [], "gone by the time exited settles");
    const others = await marked(running);
    assert.equal(others.length, 3, "the running command and its escaped shell and sleep");
    assert.ok(others.includes(Number(second.line)));
    abort.abort();
    await Promise.all([second.child.exited, second.drained]);
    assert.deepEqual(await marked(running), [], "gone once the aborted command settled");
  } finally {
    await host.stopProcesses({ graceMs: 0 });
    for (const mark of [finished, running]) killAll(await marked(mark));
  }
});

Deno.test("findOwned() finds a host's processes by marker value, only at the start of a variable", async () => {
  const token = crypto.randomUUID().replaceAll("-", "");
  const variable = ownerVariable(token);
  const seven = detachedSleep({ [variable]: "7" });
  const eight = detachedSleep({ [variable]: "8" });
  // The name inside another variable's value is no marker.
  const lookalike = detachedSleep({ OTHER: `${variable}=7` });
  try {
    const all = await findOwned(token);
    assert.deepEqual(
      all.map(({ pid, child }) => `${pid}=${child}`).sort(),
      [`${seven}=7`, `${eight}=8`].sort(),
    );
    assert.deepEqual(await findOwned(token, new Set(["7"])), [{ pid: seven, child: "7" }]);
    // Concurrent requests share scans and each gets its own.
    const scanner = new OwnedScanner(token);
    assert.deepEqual(
      await Promise.all([scanner.find("7"), scanner.find("8"), scanner.find("9")]),
      [[seven], [eight], []],
    );
  } finally {
    killAll([seven, eight, lookalike]);
  }
});

Deno.test("NodeHost.stopProcesses() ends every group and marked process, escalating to SIGKILL, then refuses to spawn", async () => {
  const host = new NodeHost();
  const stubborn = await host.spawn("/bin/sh", ["-c", "trap '' TERM; sleep 300 & echo $!; wait"], {
    cwd: "/",
  });
  const polite = await host.spawn("/bin/sh", ["-c", "sleep 300 & echo $!; wait"], { cwd: "/" });
  // Left its group, while its command still runs: the stop ends it with the command's group.
  const escaper = await host.spawn(
    "/bin/sh",
    [
      "-c",
      // Prints its pid once the job has its own group (before, the group kill would reach it).
      `setsid sleep 300 >/dev/null 2>&1 & p=$!
      while [ "$(cut -d' ' -f5 /proc/$p/stat)" != "$p" ]; do sleep 0.01; done; echo $p; wait`,
    ],
    { cwd: "/" },
  );
  void escaper.stderr.cancel();
  const escaperOut = escaper.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let line = "";
  while (!line.endsWith("\n")) {
    const { value, done } = await escaperOut.read();
    if (done) break;
    line += value;
  }
  const rest = (async () => {
    while (!(await escaperOut.read()).done) { /* drained */ }
  })();
  const escaped = Number(line.trim());
  const pids: number[] = [stubborn.pid, polite.pid, escaped];
  try {
    assert.equal(await isAlive(escaped), true);
    const outputs = [stubborn, polite].map((child) => {
      void child.stderr.cancel();
      return new Response(child.stdout).text();
    });
    // The jobs' pids are printed at once; the output ends when the groups are gone.
    const stop = host.stopProcesses({ graceMs: 100 });
    const [stubbornExit, politeExit] = await Promise.all([
      stubborn.exited,
      polite.exited,
      stop,
      escaper.exited,
      rest,
    ]);
    assert.deepEqual(stubbornExit, { code: null, signal: "SIGKILL" });
    assert.deepEqual(politeExit, { code: null, signal: "SIGTERM" });
    for (const text of await Promise.all(outputs)) pids.push(Number(text.trim()));
    assert.deepEqual(await waitGone(pids, 0), []);
    await assert.rejects(
      host.spawn("/bin/sh", ["-c", "true"], { cwd: "/" }),
      /Cannot start "\/bin\/sh": the host is shutting down/,
    );
  } finally {
    await host.stopProcesses({ graceMs: 0 });
    killAll(pids);
  }
});

const HOST_URL = new URL("../../src/host/node_host.ts", import.meta.url).href;

/**
 * A supervised host that starts a child with its stdin piped, talks to it through that pipe
 * (the child echoes its process group id back), prints the id and waits to be killed.
 */
const PIPED_CHILD_HOST = `
const [hostUrl, dir] = Deno.args;
const { NodeHost } = await import(hostUrl);
const host = new NodeHost();
await host.superviseProcesses(dir);
const child = await host.spawn("/bin/sh", ["-c", "read line; echo $line; cat; sleep 300"], {
  cwd: "/", stdin: "piped",
});
const writer = child.stdin.getWriter();
await writer.write(new TextEncoder().encode(child.pid + "\\n"));
const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
let text = "";
while (!text.endsWith("\\n")) text += (await reader.read()).value ?? "";
console.log(text.trim());
await new Promise(() => {});
`;

Deno.test("NodeHost.superviseProcesses() covers a child whose stdin is piped when the host is SIGKILLed", async () => {
  const dir = await makeTempDir("acp-harness-records-");
  const tester = new NodeHost();
  let group = 0;
  try {
    const host = await tester.spawn(
      Deno.execPath(),
      ["eval", "--no-config", PIPED_CHILD_HOST, HOST_URL, dir],
      { cwd: dir },
    );
    const stderr = new Response(host.stderr).text();
    const stdout = host.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.endsWith("\n")) {
      const { value, done } = await stdout.read();
      if (done) break;
      text += value;
    }
    group = Number(text.trim());
    if (!(group > 0)) {
      host.kill("SIGKILL");
      assert.fail(`the host printed ${JSON.stringify(text)}: ${await stderr}`);
    }
    assert.equal(await isAlive(group), true);
    host.kill("SIGKILL");
    await Promise.all([host.exited, stdout.cancel(), stderr]);
    // The host's end of the pipe is gone, so `cat` ended; `sleep 300` only dies if supervised.
    // The group is not our child: only /proc tells when it is gone.
    await pollUntil(async () => !(await groupAlive(group)), {
      what: "the whole group gone",
      timeoutMs: 5_000,
    }).catch(() => {});
    assert.equal(await groupAlive(group), false, "the whole group is gone");
  } finally {
    if (group > 0) killGroup(group);
    await tester.stopProcesses({ graceMs: 0 });
    await removeTempDir(dir);
  }
});

Deno.test("reapRecords() kills only what a dead host verifiably left", async () => {
  const dir = await makeTempDir("acp-harness-records-");
  const dead = "a".repeat(32);
  const live = "b".repeat(32);
  const old = "c".repeat(32);
  const pids: number[] = [];
  try {
    const boot = bootId() as string;
    const self = procStat(process.pid);
    assert.ok(self !== undefined && boot !== undefined, "needs Linux /proc");
    const start = (pid: number): string => procStat(pid)?.startTime as string;

    const group = detachedSleep(); // recorded with its start time: killed
    const marked = detachedSleep({ [ownerVariable(dead)]: "1" }); // not recorded, marked: killed
    const reused = detachedSleep(); // recorded with another start time (a reused pid): spared
    const ofLive = detachedSleep({ [ownerVariable(live)]: "1" }); // its host runs: spared
    const beforeBoot = detachedSleep({ [ownerVariable(old)]: "1" }); // earlier boot: spared
    pids.push(group, marked, reused, ofLive, beforeBoot);
    const record = (owner: object, lines: string[]): string =>
      `${JSON.stringify(owner)}\n${lines.map((line) => `${line}\n`).join("")}`;
    await writeFile(
      join(dir, `${dead}.procs`),
      record({ pid: 999_999_999, start: "1", boot }, [
        `${group} ${start(group)}`,
        `${reused} 1`,
      ]),
    );
    await writeFile(
      join(dir, `${live}.procs`),
      record({ pid: process.pid, start: self.startTime, boot }, [`${ofLive} ${start(ofLive)}`]),
    );
    await writeFile(
      join(dir, `${old}.procs`),
      record({ pid: 999_999_999, start: "1", boot: "another boot" }, [
        `${beforeBoot} ${start(beforeBoot)}`,
      ]),
    );

    assert.equal(await reapRecords(dir, "d".repeat(32)), 2);
    assert.deepEqual(await waitGone([group, marked]), []);
    for (const pid of [reused, ofLive, beforeBoot]) assert.equal(await isAlive(pid), true);
    assert.deepEqual(await readdir(dir), [`${live}.procs`]);
  } finally {
    killAll(pids);
    await removeTempDir(dir);
  }
});

/** A record file of a dead host (a pid that cannot exist) listing `groups` with their start times. */
function deadHostRecord(groups: readonly number[]): string {
  const boot = bootId();
  assert.ok(boot !== undefined, "needs Linux /proc");
  const owner = JSON.stringify({ pid: 999_999_999, start: "1", boot });
  return `${owner}\n${groups.map((pgid) => `${pgid} ${procStat(pgid)?.startTime}\n`).join("")}`;
}

Deno.test("NodeHost.superviseProcesses() with reapAfter reaps once it settles, and not after a shutdown", async () => {
  const dir = await makeTempDir("acp-harness-records-");
  const left = detachedSleep();
  try {
    await writeFile(join(dir, `${"a".repeat(32)}.procs`), deadHostRecord([left]));
    // Shut down before the reaping was due: nothing is reaped (nor loaded for it).
    const stopped = new NodeHost();
    let releaseStopped!: () => void;
    const notYet = new Promise<void>((resolve) => releaseStopped = resolve);
    const none = stopped.superviseProcesses(dir, { reapAfter: notYet });
    await stopped.stopProcesses({ graceMs: 0 });
    releaseStopped();
    assert.equal(await none, 0);
    assert.equal(await isAlive(left), true, "the leftover is still there");

    // Due: what the dead host left is killed, then the count resolves.
    const host = new NodeHost();
    let release!: () => void;
    const reapAfter = new Promise<void>((resolve) => release = resolve);
    const reaped = host.superviseProcesses(dir, { reapAfter });
    release();
    assert.equal(await reaped, 1);
    assert.deepEqual(await waitGone([left]), []);
    await host.stopProcesses({ graceMs: 0 });
  } finally {
    killAll([left]);
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.superviseProcesses() on a directory without records reaps nothing; a process started later is supervised", async () => {
  const base = await makeTempDir("acp-harness-records-");
  const dir = join(base, "processes"); // not there yet
  const host = new NodeHost();
  let group = 0;
  try {
    assert.equal(await host.superviseProcesses(dir), 0);
    const child = await host.spawn("sleep", ["300"], { cwd: "/" });
    group = child.pid;
    const records = await readdir(dir);
    assert.equal(records.length, 1, records.join(", "));
    assert.match(
      await Deno.readTextFile(join(dir, records[0] as string)),
      new RegExp(`^${group} `, "m"),
    );
    await Promise.all([child.stdout.cancel(), child.stderr.cancel()]);
  } finally {
    await host.stopProcesses({ graceMs: 0 });
    if (group > 0) killGroup(group);
    await removeTempDir(base);
  }
});

Deno.test("NodeHost.superviseProcesses() with reapAfter pending: a process started meanwhile is supervised and its start reaps", async () => {
  const dir = await makeTempDir("acp-harness-records-");
  const left = detachedSleep();
  const host = new NodeHost();
  let group = 0;
  try {
    await writeFile(join(dir, `${"a".repeat(32)}.procs`), deadHostRecord([left]));
    let release!: () => void;
    const reapAfter = new Promise<void>((resolve) => release = resolve);
    const reaped = host.superviseProcesses(dir, { reapAfter });
    const child = await host.spawn("sleep", ["300"], { cwd: "/" });
    group = child.pid;
    // The start reaped what the dead host left; the call resolves with that reaping's count once
    // `reapAfter` settles, without reaping again.
    assert.deepEqual(await waitGone([left]), []);
    release();
    assert.equal(await reaped, 1);
    // Recorded under this host's token: the next server would reap it after a SIGKILL of both.
    const records = await readdir(dir);
    assert.equal(records.length, 1, records.join(", "));
    const text = await Deno.readTextFile(join(dir, records[0] as string));
    assert.match(text, new RegExp(`^${child.pid} `, "m"));
    await Promise.all([child.stdout.cancel(), child.stderr.cancel()]);
  } finally {
    await host.stopProcesses({ graceMs: 0 });
    killAll([left]);
    if (group > 0) killGroup(group);
    await removeTempDir(dir);
  }
});

Deno.test("ProcessSupervisor signals only groups that still hold one of the host's processes", async () => {
  const token = crypto.randomUUID().replaceAll("-", "");
  // A group of the host's (carries its marker) and a group id that now names someone else's group
  // (the number of a group of ours that ended, reused: no member carries the marker).
  const ours = detachedSleep({ [ownerVariable(token)]: "1" });
  const theirs = detachedSleep();
  const supervisor = new ProcessSupervisor(token, "");
  try {
    supervisor.add(ours);
    supervisor.add(theirs);
    await supervisor.close();
    assert.deepEqual(await waitGone([ours]), [], "the host's group is gone");
    assert.equal(await isAlive(theirs), true, "the other group is left alone");
  } finally {
    killGroup(ours);
    killGroup(theirs);
  }
});
