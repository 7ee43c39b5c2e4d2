/**
 * What keeps the processes a host starts from outliving it: a supervisor process that kills them
 * when the host's process dies (even by SIGKILL), a record of them in the data directory that the
 * next start reaps when the supervisor died too, and the Linux `/proc` checks both rely on to
 * never touch an unrelated process.
 *
 * Every spawned process carries `ACP_HARNESS_OWNER_<token>=<child>` in its environment, with a
 * random token of the host that started it and the number of that spawn; its descendants inherit
 * it (and a nested server adds its own). On Linux a process is recognised as ours by that variable
 * in `/proc/<pid>/environ` (and as a descendant of one spawn by its value, even after it left the
 * process group with `setsid`), and a process group by its leader's start time in
 * `/proc/<pid>/stat`. Scans of `/proc` are asynchronous and read a few files at a time, so even
 * with thousands of processes they never hold the event loop.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import * as childProcess from "node:child_process";
import { appendFileSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import * as fs from "node:fs/promises";
import process from "node:process";
import type { Writable } from "node:stream";

/** The prefix of the environment variable that marks what one host started, directly or not. */
export const OWNER_PREFIX = "ACP_HARNESS_OWNER_";

/** How long the supervisor gives SIGTERM before SIGKILL. */
const SUPERVISOR_GRACE_S = 1;
/** How long the reaper waits for killed processes to be gone before it gives up on them. */
const REAP_CONFIRM_MS = 2_000;
/** How many `/proc` files a scan reads at once. */
const SCAN_CONCURRENCY = 16;

/** What `/proc/<pid>/stat` says about a process (Linux). */
export interface ProcStat {
  /** Its process group. */
  readonly pgid: number;
  /** Its state letter (`Z` for a zombie). */
  readonly state: string;
  /** When it started, in clock ticks since boot. */
  readonly startTime: string;
}

/**
 * Reads `/proc/<pid>/stat`.
 *
 * @param pid A process id
 * @returns Its group, state and start time; `undefined` when it does not exist or there is no `/proc`
 */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return undefined;
  }
  return parseStat(text);
}

function parseStat(text: string): ProcStat | undefined {
  // The command name (field 2) is in parentheses and may contain anything, ")" included.
  const fields = text.slice(text.lastIndexOf(")") + 2).split(" ");
  const [state, , pgid] = fields;
  const startTime = fields[19];
  if (state === undefined || pgid === undefined || startTime === undefined) return undefined;
  return { pgid: Number(pgid), state, startTime };
}

/** Whether this system has a Linux-style `/proc` (what the identity checks need). */
export function hasProc(): boolean {
  return procStat(process.pid) !== undefined;
}

/** This boot's id (Linux), so that a record from before a reboot is never acted on. */
export function bootId(): string | undefined {
  try {
    return readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
  } catch {
    return undefined;
  }
}

/**
 * Whether process group `pgid` still has a live member. A group of zombies only (dead processes
 * whose new parent does not reap them, as some container inits do) counts as gone.
 *
 * @param pgid A process group id
 * @returns `false` once no member can run any more
 */
export async function groupAlive(pgid: number): Promise<boolean> {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as { code?: unknown } | null)?.code === "EPERM";
  }
  let alive = false;
  const scanned = await eachProcess(async (pid) => {
    let text: string;
    try {
      text = await fs.readFile(`/proc/${pid}/stat`, "utf8");
    } catch {
      return false;
    }
    const stat = parseStat(text);
    alive ||= stat?.pgid === pgid && stat.state !== "Z";
    return alive;
  });
  return alive || !scanned;
}

/**
 * Calls `visit` for every process in `/proc`, {@link SCAN_CONCURRENCY} at a time, until one
 * returns `true`. Asynchronous throughout: each file read is its own turn of the event loop.
 *
 * @returns `false` when there is no `/proc` to scan
 */
async function eachProcess(visit: (pid: number) => Promise<boolean>): Promise<boolean> {
  let entries: string[];
  try {
    entries = await fs.readdir("/proc");
  } catch {
    return false;
  }
  let next = 0;
  let stop = false;
  const worker = async (): Promise<void> => {
    while (!stop && next < entries.length) {
      const name = entries[next++] as string;
      const pid = Number(name);
      if (!Number.isSafeInteger(pid) || pid <= 0 || String(pid) !== name) continue;
      if (await visit(pid)) stop = true;
    }
  };
  await Promise.all(Array.from({ length: SCAN_CONCURRENCY }, worker));
  return true;
}

/**
 * The environment variable name that marks descendants of the host with `token`.
 *
 * @param token The host's token (32 hex digits)
 * @returns `ACP_HARNESS_OWNER_<token>`
 */
export function ownerVariable(token: string): string {
  return `${OWNER_PREFIX}${token}`;
}

/**
 * The processes (Linux) whose environment carries `token`'s marker, this process excluded.
 *
 * @param token A host's token
 * @param children Only those whose marker's value (the spawn that started them or their
 *   ancestor) is one of these @default {any value}
 * @returns Their pids, each with its marker's value; empty without `/proc`
 */
export async function findOwned(
  token: string,
  children?: ReadonlySet<string>,
): Promise<Array<{ readonly pid: number; readonly child: string }>> {
  const needle = Buffer.from(`${ownerVariable(token)}=`, "latin1");
  const found: Array<{ pid: number; child: string }> = [];
  await eachProcess(async (pid) => {
    if (pid === process.pid) return false;
    let environ: Buffer;
    try {
      environ = await fs.readFile(`/proc/${pid}/environ`);
    } catch {
      return false; // Gone, or someone else's.
    }
    const child = markerValue(environ, needle);
    if (child !== undefined && (children === undefined || children.has(child))) {
      found.push({ pid, child });
    }
    return false;
  });
  return found;
}

/** The value of the variable `needle` (`NAME=`) names in a NUL-separated environment. */
function markerValue(environ: Buffer, needle: Buffer): string | undefined {
  let at = environ.indexOf(needle);
  // Only at the start of an entry: another variable's value may contain the name.
  while (at > 0 && environ[at - 1] !== 0) at = environ.indexOf(needle, at + 1);
  if (at < 0) return undefined;
  const start = at + needle.length;
  const end = environ.indexOf(0, start);
  return environ.toString("latin1", start, end < 0 ? environ.length : end);
}

/**
 * Finds the processes carrying given spawns' markers for many callers at once: the requests that
 * arrive while a scan runs share the next one, so a session that stops ten MCP servers, or a
 * burst of commands that end together, costs one or two reads of `/proc`, not one each.
 */
export class OwnedScanner {
  readonly #token: string;
  #waiting = new Map<string, Array<(pids: number[]) => void>>();
  #scanning = false;

  /** @param token The host's token */
  constructor(token: string) {
    this.#token = token;
  }

  /**
   * The processes (Linux) that carry the marker of spawn `child`, found by a scan that starts
   * after this call.
   *
   * @param child The spawn's marker value
   * @returns Their pids; empty without `/proc`
   */
  find(child: string): Promise<number[]> {
    return new Promise((resolve) => {
      const waiting = this.#waiting.get(child);
      if (waiting) waiting.push(resolve);
      else this.#waiting.set(child, [resolve]);
      if (!this.#scanning) void this.#scan();
    });
  }

  async #scan(): Promise<void> {
    this.#scanning = true;
    while (this.#waiting.size > 0) {
      const batch = this.#waiting;
      this.#waiting = new Map();
      const found = await findOwned(this.#token, new Set(batch.keys())).catch(() => []);
      for (const [child, resolvers] of batch) {
        const pids = found.filter((entry) => entry.child === child).map((entry) => entry.pid);
        for (const resolve of resolvers) resolve(pids);
      }
    }
    this.#scanning = false;
  }
}

/**
 * The supervisor: `/bin/sh` reading "+<pgid>" and "-<pgid>" lines from the host. When its stdin
 * ends (the host exited or was killed, or closed it) it sends SIGTERM to the groups it holds and,
 * on Linux, to every process whose environment carries the marker ($1); one second later SIGKILL
 * to what is left; then it removes the record file ($2). On Linux a group is signalled only while
 * one of its members carries the marker: a group id whose processes are all gone may already
 * name someone else's new group (pids are reused).
 */
const SUPERVISOR_SCRIPT = `t=$1 r=$2 g=' ' k=''
while IFS= read -r l; do
  case $l in
    +*) g="$g\${l#+} " ;;
    -*) n=\${l#-}; case $g in *" $n "*) g="\${g%% $n *} \${g#* $n }" ;; esac ;;
  esac
done
s() {
  x=$1 m=''
  if [ -d /proc/self ]; then
    for f in $(grep -l -s -F "$t=" /proc/[0-9]*/environ); do n=\${f#/proc/}; m="$m \${n%/environ}"; done
  fi
  for n in $g; do
    if [ -d /proc/self ]; then
      v=''
      for p in $m; do
        q=$(cat "/proc/$p/stat" 2>/dev/null) || continue
        q=\${q##*) }; set -- $q; [ "$3" = "$n" ] && v=1 && break
      done
      [ -n "$v" ] || continue
    fi
    kill -s "$x" -- "-$n" 2>/dev/null && k=1
  done
  for p in $m; do kill -s "$x" "$p" 2>/dev/null && k=1; done
}
s TERM
if [ -n "$k" ]; then sleep ${SUPERVISOR_GRACE_S}; s KILL; fi
[ -z "$r" ] || rm -f "$r"
`;

/**
 * A small `/bin/sh` process, in its own session, that holds the list of live process groups and
 * kills them (and every process carrying the host's marker) when the host's end of its stdin
 * closes: on a clean exit, a crash or SIGKILL alike. Started lazily, restarted if it dies.
 */
export class ProcessSupervisor {
  readonly #token: string;
  readonly #record: string;
  readonly #groups = new Set<number>();
  #child: childProcess.ChildProcessByStdio<Writable, null, null> | undefined;
  #exited: Promise<void> = Promise.resolve();
  #closed = false;

  /**
   * Creates a supervisor (no process yet).
   *
   * @param token The host's token (its marker in the environment of what it starts)
   * @param record The record file the supervisor removes after its cleanup ("" for none)
   */
  constructor(token: string, record: string) {
    this.#token = token;
    this.#record = record;
  }

  /** The supervisor's pid, once it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Starts the supervisor unless it runs; it then holds every group added so far. */
  start(): void {
    if (this.#closed || this.#child) return;
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(process.env)) {
      // No host's marker, its own nor a parent server's: a sweep for the processes of one spawn
      // (this server, delegated by another) must not end the supervisor before it did its work.
      if (value !== undefined && !name.startsWith(OWNER_PREFIX)) env[name] = value;
    }
    const child = childProcess.spawn(
      "/bin/sh",
      ["-c", SUPERVISOR_SCRIPT, "acp-harness-supervisor", ownerVariable(this.#token), this.#record],
      { detached: true, stdio: ["pipe", "ignore", "ignore"], env },
    );
    this.#child = child;
    child.stdin.on("error", () => {});
    child.on("error", () => {});
    this.#exited = new Promise((resolve) => {
      child.once("exit", () => {
        if (this.#child === child) this.#child = undefined;
        resolve();
      });
    });
    const lines = [...this.#groups].map((pgid) => `+${pgid}\n`).join("");
    if (lines !== "") child.stdin.write(lines);
  }

  /** Tells the supervisor about a new process group. */
  add(pgid: number): void {
    this.#groups.add(pgid);
    if (!this.#child) this.start();
    else this.#child.stdin.write(`+${pgid}\n`);
  }

  /** Tells the supervisor a process group is gone. */
  remove(pgid: number): void {
    if (!this.#groups.delete(pgid)) return;
    this.#child?.stdin.write(`-${pgid}\n`);
  }

  /**
   * Closes the supervisor's stdin, so it cleans up and exits, and waits for it (a few seconds at
   * most); it is not started again.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const child = this.#child;
    if (!child) return;
    child.stdin.end();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      this.#exited,
      new Promise((resolve) => timer = setTimeout(resolve, (SUPERVISOR_GRACE_S + 4) * 1000)),
    ]);
    clearTimeout(timer);
  }
}

/** What a record file's first line says about the host that wrote it. */
interface RecordOwner {
  readonly pid: number;
  readonly start: string;
  readonly boot: string;
}

/**
 * A file in the data directory listing the process groups a host started (Linux only: without
 * `/proc` nothing could be verified later). The next start reaps what a dead host left.
 */
export class ProcessRecord {
  readonly #file: string;
  #written = false;

  /**
   * Names the record (nothing is written before the first group).
   *
   * @param dir The directory of records
   * @param token The host's token (the file's name)
   */
  constructor(dir: string, token: string) {
    this.#file = `${dir}/${token}.procs`;
  }

  /** The record file's path. */
  get file(): string {
    return this.#file;
  }

  /**
   * Appends a group (its id and its leader's start time); writes the owner line first.
   *
   * @param pgid The group (its leader's pid)
   * @returns `false` when it could not be recorded (no `/proc`, the leader already gone, or I/O)
   */
  add(pgid: number): boolean {
    const leader = procStat(pgid);
    if (!leader) return false;
    try {
      if (!this.#written) {
        const self = procStat(process.pid);
        const boot = bootId();
        if (!self || boot === undefined) return false;
        const owner: RecordOwner = { pid: process.pid, start: self.startTime, boot };
        const temp = `${this.#file}.tmp`;
        mkdirSync(dirnameOf(this.#file), { recursive: true });
        writeFileSync(temp, `${JSON.stringify(owner)}\n`);
        renameSync(temp, this.#file);
        this.#written = true;
      }
      appendFileSync(this.#file, `${pgid} ${leader.startTime}\n`);
      return true;
    } catch {
      return false;
    }
  }

  /** Removes the record (every group it lists is gone). */
  async remove(): Promise<void> {
    if (!this.#written) return;
    await fs.rm(this.#file, { force: true });
  }
}

/**
 * Kills what hosts that are no longer running left behind, as their records in `dir` say: each
 * recorded group whose leader still has its recorded start time, and every process carrying the
 * dead host's marker. Records of running hosts (same pid and start time, same boot) are left
 * alone; records from an earlier boot are dropped. Linux only (a no-op without `/proc`).
 *
 * @param dir The directory of records
 * @param own This host's token (its record is skipped)
 * @returns How many processes or groups were sent SIGKILL
 */
export async function reapRecords(dir: string, own: string): Promise<number> {
  if (!hasProc()) return 0;
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch {
    return 0;
  }
  const boot = bootId();
  let killed = 0;
  for (const name of names) {
    const token = /^([0-9a-f]{32})\.procs$/.exec(name)?.[1];
    if (token === undefined || token === own) continue;
    const file = `${dir}/${name}`;
    let text: string;
    try {
      text = await fs.readFile(file, "utf8");
    } catch {
      continue;
    }
    const [head = "", ...lines] = text.split("\n");
    const owner = parseOwner(head);
    if (owner !== undefined && owner.boot === boot) {
      const host = procStat(owner.pid);
      if (host && host.startTime === owner.start && host.state !== "Z") continue;
      const pids: number[] = [];
      for (const line of lines) {
        const [id, start] = line.split(" ");
        const pgid = Number(id);
        if (!Number.isSafeInteger(pgid) || pgid <= 1) continue;
        const leader = procStat(pgid);
        if (!leader || leader.startTime !== start || leader.pgid !== pgid) continue;
        if (signal(-pgid, "SIGKILL")) {
          killed++;
          pids.push(pgid);
        }
      }
      for (const { pid } of await findOwned(token)) {
        if (signal(pid, "SIGKILL")) {
          killed++;
          pids.push(pid);
        }
      }
      await waitGone(pids, REAP_CONFIRM_MS);
    }
    await fs.rm(file, { force: true });
  }
  return killed;
}

function parseOwner(line: string): RecordOwner | undefined {
  try {
    const value = JSON.parse(line) as Partial<RecordOwner> | null;
    if (
      typeof value?.pid === "number" && typeof value.start === "string" &&
      typeof value.boot === "string"
    ) return value as RecordOwner;
  } catch {
    // A corrupt record: its host is not running (records are written whole by a rename).
  }
  return undefined;
}

/**
 * Ends processes: SIGTERM now, SIGKILL to those left after `graceMs`, and waits until they are
 * gone (a zombie counts as gone) or SIGKILL had 2 s.
 *
 * @param pids The processes
 * @param graceMs Time between SIGTERM and SIGKILL
 */
export async function terminatePids(pids: readonly number[], graceMs: number): Promise<void> {
  const signalled = pids.filter((pid) => signal(pid, "SIGTERM"));
  if (signalled.length === 0) return;
  await waitGone(signalled, graceMs);
  const left = signalled.filter((pid) => signal(pid, "SIGKILL"));
  await waitGone(left, REAP_CONFIRM_MS);
}

function signal(target: number, name: "SIGTERM" | "SIGKILL"): boolean {
  try {
    process.kill(target, name);
    return true;
  } catch {
    return false;
  }
}

async function waitGone(pids: readonly number[], ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  let delay = 2;
  let left = pids;
  while (Date.now() < deadline) {
    const alive = await Promise.all(left.map(running));
    left = left.filter((_, index) => alive[index]);
    if (left.length === 0) return;
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
}

/** Whether a process exists and is not a zombie (read asynchronously). */
async function running(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== "EPERM") return false;
  }
  try {
    return parseStat(await fs.readFile(`/proc/${pid}/stat`, "utf8"))?.state !== "Z";
  } catch {
    return false;
  }
}

function dirnameOf(file: string): string {
  return file.slice(0, file.lastIndexOf("/")) || "/";
}
