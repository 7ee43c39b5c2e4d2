/**
 * Running acpx in tests, and what it leaves outside its HOME, so tests that run it can remove it.
 *
 * @module
 */
import { ROOT } from "./runtimes.ts";
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { readdir, readFile, rm } from "node:fs/promises";
import process from "node:process";
import { pollUntil } from "./wait.ts";

/**
 * The acpx executable, from the test clients' own manifest (tests/clients/package.json, installed
 * by `npm install --prefix tests/clients`), kept out of the root manifest so Deno never resolves it.
 */
export const ACPX: string = `${ROOT}tests/clients/node_modules/.bin/acpx`;

/**
 * The directory where acpx keeps the queue sockets of the sessions run with `home` as HOME:
 * `/tmp/acpx-` plus the first 10 hex digits of the SHA-256 of `home`, whatever TMPDIR says
 * (acpx's `queueSocketBaseDir`).
 *
 * @param home The HOME acpx ran with
 */
export function acpxSocketDir(home: string): string {
  return `/tmp/acpx-${createHash("sha256").update(home).digest("hex").slice(0, 10)}`;
}

/**
 * Removes {@link acpxSocketDir} for `home`.
 *
 * @param home The HOME acpx ran with
 */
export async function removeAcpxSocketDir(home: string): Promise<void> {
  await rm(acpxSocketDir(home), { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
}

/**
 * The processes running with `home` as HOME other than this one: the queue owners acpx leaves
 * (each lingers for its `--ttl`) and the agents they run. Only /proc tells: they are not our
 * children.
 *
 * @param home The HOME acpx ran with
 * @returns Their pids
 */
export async function acpxProcesses(home: string): Promise<number[]> {
  const needle = `\0HOME=${home}\0`;
  const found: number[] = [];
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    const environ = await readFile(`/proc/${entry}/environ`, "latin1").catch(() => "");
    if (`\0${environ}`.includes(needle)) found.push(Number(entry));
  }
  return found;
}

/**
 * Ends the processes acpx left running with `home` as HOME (its queue owners linger for their
 * `--ttl` and write into HOME as they exit), so that removing the test's directory is final.
 * Only /proc tells which processes those are: they are not our children.
 *
 * @param home The HOME acpx ran with
 */
export async function stopAcpxProcesses(home: string): Promise<void> {
  const signal = (pids: readonly number[], name: "SIGTERM" | "SIGKILL"): void => {
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch {
        // Gone meanwhile.
      }
    }
  };
  signal(await acpxProcesses(home), "SIGTERM");
  const gone = await pollUntil(async () => (await acpxProcesses(home)).length === 0, {
    what: `acpx processes with HOME=${home} gone`,
    timeoutMs: 3_000,
  }).then(() => true, () => false);
  if (!gone) signal(await acpxProcesses(home), "SIGKILL");
}

/** What one acpx run printed (with `--format json`: the frames of both directions). */
export interface AcpxRun {
  readonly code: number | null;
  readonly frames: Array<Record<string, unknown>>;
  readonly stderr: string;
}

/** Options for {@link runAcpx}. */
export interface RunAcpxOptions {
  /** Where acpx runs (the session's cwd). */
  readonly cwd: string;
  /** The environment on top of this process's (HOME, the agent's data directory, …). */
  readonly env: Readonly<Record<string, string>>;
  /** Told of everything acpx prints on stdout so far, with the child (to signal it). */
  readonly onStdout?: (stdout: string, child: ChildProcess) => void;
  /** A bound on a hung run (SIGKILL after it), not a wait. @default 30_000 */
  readonly timeoutMs?: number;
  /**
   * When the run is over: `close` (acpx exited and its output ended) or `exit` (acpx exited: a
   * queue owner it left may hold its output open). @default "close"
   */
  readonly until?: "close" | "exit";
}

/**
 * Runs acpx to its exit and parses its JSON lines.
 *
 * @param args acpx's arguments
 * @param options Where and how
 * @returns What it printed
 */
export function runAcpx(args: readonly string[], options: RunAcpxOptions): Promise<AcpxRun> {
  const child = spawn(ACPX, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", (text: string) => {
    stdout += text;
    options.onStdout?.(stdout, child);
  });
  child.stderr.on("data", (text: string) => stderr += text);
  const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs ?? 30_000);
  return new Promise((resolve) => {
    child.on(options.until ?? "close", (code: number | null) => {
      clearTimeout(timer);
      const frames = stdout.split("\n").filter((line) => line.trim() !== "").map((line) =>
        JSON.parse(line) as Record<string, unknown>
      );
      resolve({ code, frames, stderr });
    });
  });
}
