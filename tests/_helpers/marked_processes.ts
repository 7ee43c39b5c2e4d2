/**
 * Finding the processes a test or a torture scenario started, however deep (commands'
 * descendants, delegated agents, supervisors): each carries a marker in its environment, which
 * every process it starts inherits, and `/proc` is read for it. Such processes are not our
 * children and end by no event we could wait on, so {@link hunt} and {@link waitForProcess} poll.
 *
 * @example Nothing left behind
 * ```ts
 * import { hunt, killAll } from "./marked_processes.ts";
 * const left = await hunt("a-unique-marker", 100);
 * killAll(left);
 * ```
 *
 * @module
 */
import { readdir, readFile } from "node:fs/promises";
import process from "node:process";
import { pollUntil } from "./wait.ts";

/** The environment variable that carries a test's marker. */
export const MARK = "ACP_HARNESS_TEST_MARK";

/** A live process found by {@link findMarked}. */
export interface MarkedProcess {
  readonly pid: number;
  /** Its command line, arguments joined by spaces. */
  readonly command: string;
}

/** Whether `/proc/<pid>/stat` says the process is a zombie or dead. */
function ended(stat: string): boolean {
  return /^[ZX]/.test(stat.slice(stat.lastIndexOf(")") + 2));
}

/** The pids in `/proc`; none where there is no `/proc`. */
async function pids(): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir("/proc");
  } catch {
    return [];
  }
  return entries.filter((entry) => /^\d+$/.test(entry)).map(Number);
}

/** A file of `/proc/<pid>`, or "" when it is gone or not ours to read. */
async function procFile(pid: number, name: string): Promise<string> {
  try {
    return await readFile(`/proc/${pid}/${name}`, "latin1");
  } catch {
    return "";
  }
}

/**
 * The live (non-zombie) processes whose environment carries `ACP_HARNESS_TEST_MARK=<mark>`.
 *
 * @param mark The marker's value
 * @returns Their pids
 */
export async function marked(mark: string): Promise<number[]> {
  const found: number[] = [];
  const entry = `${MARK}=${mark}`;
  for (const pid of await pids()) {
    const environ = await procFile(pid, "environ");
    if (!environ.split("\0").includes(entry)) continue;
    const stat = await procFile(pid, "stat");
    if (stat !== "" && !ended(stat)) found.push(pid);
  }
  return found;
}

/**
 * Every live process (other than this one) whose environment or command line contains
 * `marker` anywhere: the torture suite's markers are unique strings in a variable of their own.
 *
 * @param marker The string to look for
 * @returns The processes, with their command lines
 */
export async function findMarked(marker: string): Promise<MarkedProcess[]> {
  const found: MarkedProcess[] = [];
  for (const pid of await pids()) {
    if (pid === process.pid) continue;
    const environ = await procFile(pid, "environ");
    const cmdline = await procFile(pid, "cmdline");
    if (!environ.includes(marker) && !cmdline.includes(marker)) continue;
    const stat = await procFile(pid, "stat");
    if (stat !== "" && !ended(stat)) {
      found.push({ pid, command: cmdline.replaceAll("\0", " ").trim() });
    }
  }
  return found;
}

/**
 * Polls until no process carries `marker` except those in `except` (or whose command matches
 * `ignore`), for at most `ms`.
 *
 * @param marker The string to look for
 * @param ms How long to poll
 * @param except Pids that may stay
 * @param ignore Commands that may stay
 * @returns The processes still alive then (none when all went)
 */
export async function hunt(
  marker: string,
  ms: number,
  except: readonly number[] = [],
  ignore?: RegExp,
): Promise<MarkedProcess[]> {
  let left: MarkedProcess[] = [];
  await pollUntil(async () => {
    left = (await findMarked(marker)).filter(({ pid, command }) =>
      !except.includes(pid) && !(ignore?.test(command) ?? false)
    );
    return left.length === 0;
  }, { what: `no process carrying ${marker}`, timeoutMs: ms, intervalMs: 50 }).catch(() => {});
  return left;
}

/**
 * Waits, for at most `ms`, until a process carrying `marker` has `pattern` in its command line.
 *
 * @param marker The string to look for
 * @param pattern What its command line must match
 * @param ms How long to poll
 * @returns The process, or undefined when none came
 */
export async function waitForProcess(
  marker: string,
  pattern: RegExp,
  ms: number,
): Promise<MarkedProcess | undefined> {
  let found: MarkedProcess | undefined;
  await pollUntil(async () => {
    found = (await findMarked(marker)).find(({ command }) => pattern.test(command));
    return found !== undefined;
  }, { what: `a process carrying ${marker} running ${pattern}`, timeoutMs: ms, intervalMs: 25 })
    .catch(() => {});
  return found;
}

/**
 * SIGKILLs the given processes (ones our servers started), by pid; those gone meanwhile are
 * skipped.
 *
 * @param processes What {@link findMarked} or {@link hunt} found
 */
export function killAll(processes: readonly MarkedProcess[]): void {
  for (const { pid } of processes) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone.
    }
  }
}
