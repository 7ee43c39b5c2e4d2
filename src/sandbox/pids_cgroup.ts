/**
 * A bound on the number of processes a sandboxed command may start (a fork bomb stops there):
 * each command in a fresh `pids` cgroup with its `pids.max`. `RLIMIT_NPROC` (`ulimit -u`) would
 * not bind root, and counts every process of the user rather than the command's; a cgroup counts
 * exactly the command's tree, whoever runs it.
 *
 * @module
 */
import type { HostEnvironment, HostFiles } from "../host/host.ts";
import type { WrappedCommand } from "./sandbox.ts";

/** The name of every cgroup of this program's commands starts so: `acp-harness-<pid>-<n>`. */
const PREFIX = "acp-harness-";

/**
 * The shell that moves itself into the cgroup before it becomes the sandbox (`exec`), so that no
 * process of the command starts outside it; when the cgroup cannot be made, the command does not
 * run.
 */
const ENTER = 'mkdir "$1" && echo "$2" > "$1/pids.max" && echo $$ > "$1/cgroup.procs" && ' +
  'shift 2 && exec "$@"';

/** How often the removal of a command's cgroup is tried (its last processes may still be going). */
const REMOVE_TRIES = 20;

/** The writable pids cgroups of this machine: one per command, removed when it ends. */
export class PidsCgroups {
  readonly #dir: string;
  readonly #files: Pick<HostFiles, "remove" | "readDir">;
  readonly #env: Pick<HostEnvironment, "pid" | "isProcessAlive">;
  #next = 0;

  /**
   * Makes the cgroups' maker.
   *
   * @param dir A writable pids cgroup whose children get the `pids` controller (see
   *   {@link findPidsCgroups})
   * @param host Removes cgroups and tells which servers are alive
   */
  constructor(
    dir: string,
    host: Pick<HostFiles, "remove" | "readDir"> & Pick<HostEnvironment, "pid" | "isProcessAlive">,
  ) {
    this.#dir = dir;
    this.#files = host;
    this.#env = host;
  }

  /** The cgroup under which the commands' cgroups are made. */
  get dir(): string {
    return this.#dir;
  }

  /**
   * `command` run in a fresh cgroup of at most `limit` processes, removed by its `cleanup`.
   *
   * @param command What the sandbox runs
   * @param limit The most processes (threads included) the command's tree may have at once
   * @returns The command entered into its cgroup
   */
  wrap(command: WrappedCommand, limit: number): WrappedCommand {
    const cgroup = `${this.#dir}/${PREFIX}${this.#env.pid()}-${++this.#next}`;
    return {
      program: "/bin/sh",
      args: ["-c", ENTER, "sh", cgroup, String(limit), command.program, ...command.args],
      cleanup: async () => {
        await command.cleanup?.();
        await this.#remove(cgroup);
      },
    };
  }

  /**
   * Removes the cgroups that servers which are no longer running left behind.
   *
   * @returns How many were removed
   */
  async reapStale(): Promise<number> {
    const entries = await this.#files.readDir(this.#dir).catch(() => []);
    let removed = 0;
    for (const entry of entries) {
      if (!entry.name.startsWith(PREFIX)) continue;
      const pid = Number(entry.name.slice(PREFIX.length).split("-")[0]);
      if (!entry.isDirectory || !Number.isInteger(pid) || this.#env.isProcessAlive(pid)) continue;
      if (await this.#removeOnce(`${this.#dir}/${entry.name}`)) removed++;
    }
    return removed;
  }

  async #remove(cgroup: string): Promise<void> {
    // The kernel releases the last processes of the tree just after the command's end.
    for (let attempt = 0; attempt < REMOVE_TRIES; attempt++) {
      if (await this.#removeOnce(cgroup)) return;
      await new Promise((resolve) => setTimeout(resolve, 10 * (attempt + 1)));
    }
  }

  async #removeOnce(cgroup: string): Promise<boolean> {
    try {
      await this.#files.remove(cgroup);
      return true;
    } catch {
      return false;
    }
  }
}

/**
 * Finds a pids cgroup this process may make child cgroups in: cgroup v1's
 * `/sys/fs/cgroup/pids`, else its own cgroup v2 when it is delegated with the `pids` controller
 * enabled for its children. Probes by making (and removing) one.
 *
 * @param host Reads and makes the cgroups
 * @returns The cgroups, or `undefined` when none is writable (commands then have no pids bound)
 */
export async function findPidsCgroups(
  host:
    & Pick<HostFiles, "remove" | "readDir" | "mkdir" | "readTextFile" | "stat">
    & Pick<HostEnvironment, "pid" | "isProcessAlive">,
): Promise<PidsCgroups | undefined> {
  const candidates: string[] = [];
  if (await host.stat("/sys/fs/cgroup/pids/cgroup.procs")) candidates.push("/sys/fs/cgroup/pids");
  const own = await host.readTextFile("/proc/self/cgroup").catch(() => "");
  const unified = own.split("\n").find((line) => line.startsWith("0::"));
  if (unified !== undefined) {
    const base = `/sys/fs/cgroup${unified.slice(3).replace(/\/$/, "")}`;
    const control = await host.readTextFile(`${base}/cgroup.subtree_control`).catch(() => "");
    if (control.split(/\s+/).includes("pids")) candidates.push(base);
  }
  for (const base of candidates) {
    const probe = `${base}/${PREFIX}${host.pid()}-probe`;
    try {
      await host.mkdir(probe);
      const usable = await host.stat(`${probe}/pids.max`) !== undefined;
      await host.remove(probe);
      if (usable) return new PidsCgroups(base, host);
    } catch {
      // Not writable here: the next candidate.
    }
  }
  return undefined;
}
