/**
 * What acpx leaves outside its HOME, so tests that run it can remove it.
 *
 * @module
 */
import { createHash } from "node:crypto";
import { rm } from "node:fs/promises";

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
