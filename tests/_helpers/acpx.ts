/**
 * What acpx leaves outside its HOME, so tests that run it can remove it.
 *
 * @module
 */
import { ROOT } from "./runtimes.ts";
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
 * Ends the processes acpx left running with `home` as HOME (its queue owners linger for their
 * `--ttl` and write into HOME as they exit), so that removing the test's directory is final.
 * Only /proc tells which processes those are: they are not our children.
 *
 * @param home The HOME acpx ran with
 */
export async function stopAcpxProcesses(home: string): Promise<void> {
  const needle = `\0HOME=${home}\0`;
  const find = async (): Promise<number[]> => {
    const found: number[] = [];
    for (const entry of await readdir("/proc").catch(() => [] as string[])) {
      if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
      const environ = await readFile(`/proc/${entry}/environ`, "latin1").catch(() => "");
      if (`\0${environ}`.includes(needle)) found.push(Number(entry));
    }
    return found;
  };
  const signal = (pids: readonly number[], name: "SIGTERM" | "SIGKILL"): void => {
    for (const pid of pids) {
      try {
        process.kill(pid, name);
      } catch {
        // Gone meanwhile.
      }
    }
  };
  signal(await find(), "SIGTERM");
  const gone = await pollUntil(async () => (await find()).length === 0, {
    what: `acpx processes with HOME=${home} gone`,
    timeoutMs: 3_000,
  }).then(() => true, () => false);
  if (!gone) signal(await find(), "SIGKILL");
}
