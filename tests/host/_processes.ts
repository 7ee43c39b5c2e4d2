/**
 * Test helpers that watch processes by pid.
 *
 * @module
 */
import { pollUntil } from "../_helpers/wait.ts";
import process from "node:process";

/** Whether a process with this id still exists (`kill -0`); zombies count as gone. */
export async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = await Deno.readTextFile(`/proc/${pid}/stat`);
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return true;
  }
}

/** Waits until none of `pids` is alive, up to `ms`; returns the ones still alive. */
export async function waitGone(pids: readonly number[], ms = 3_000): Promise<number[]> {
  let left: number[] = [...pids];
  // Processes that are not our children (grandchildren, a re-parented group) announce their end
  // by no event: poll /proc.
  await pollUntil(async () => {
    const alive: number[] = [];
    for (const pid of left) if (await isAlive(pid)) alive.push(pid);
    left = alive;
    return left.length === 0;
  }, { what: `processes ${pids.join(", ")} gone`, timeoutMs: ms }).catch(() => {});
  return left;
}
