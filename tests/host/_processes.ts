/**
 * Test helpers that watch processes by pid.
 *
 * @module
 */
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
  const deadline = Date.now() + ms;
  for (;;) {
    const left: number[] = [];
    for (const pid of pids) if (await isAlive(pid)) left.push(pid);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
