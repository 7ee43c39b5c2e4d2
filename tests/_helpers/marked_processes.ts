/**
 * Finding the processes a test started, however deep (commands' descendants, delegated agents):
 * each carries a marker in its environment, and `/proc` is read for it.
 *
 * @module
 */
import { readdir, readFile } from "node:fs/promises";

/** The environment variable that carries a test's marker. */
export const MARK = "ACP_HARNESS_TEST_MARK";

/**
 * The live (non-zombie) processes whose environment carries the marker.
 *
 * @param mark The marker's value
 * @returns Their pids
 */
export async function marked(mark: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = await readFile(`/proc/${entry}/stat`, "utf8");
      if (stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z")) continue;
      const environ = await readFile(`/proc/${entry}/environ`, "latin1");
      if (environ.split("\0").includes(`${MARK}=${mark}`)) found.push(Number(entry));
    } catch {
      // Gone meanwhile, or not ours.
    }
  }
  return found;
}
