/**
 * Process spawning confined by the command sandbox, for the children a session starts besides
 * its commands (`--sandbox-children`): MCP stdio servers and delegated agents.
 *
 * @module
 */
import type { HostProcess, HostProcesses, PipedHostProcess, SpawnOptions } from "../host/host.ts";
import type { CommandSandbox } from "./command_sandbox.ts";

/** Where a session's children run. */
export interface SandboxedChildren {
  /** The session's canonical roots, the cwd first (writable at `workspace-write`). */
  readonly roots: readonly string[];
  /** Directories writable besides the roots. @default {[]} */
  readonly writable?: readonly string[];
}

/**
 * `processes` whose every spawn runs inside `sandbox` at its server level (a child's program
 * and arguments become the sandbox's argv; its pids cgroup is removed once it has exited). When
 * the sandbox does not confine children (`children` off, or level `off`), `processes` itself.
 *
 * @example Confining a session's MCP servers
 * ```ts ignore
 * const confined = sandboxedProcesses(host, sandbox, { roots: [cwd] });
 * await confined.spawn("npx", ["my-mcp-server"], { cwd, stdin: "piped" });
 * ```
 *
 * @param processes Starts the processes
 * @param sandbox The server's sandbox
 * @param children The session's roots
 * @returns The spawner to hand MCP servers and delegated agents
 */
export function sandboxedProcesses(
  processes: Pick<HostProcesses, "spawn">,
  sandbox: CommandSandbox | undefined,
  children: SandboxedChildren,
): Pick<HostProcesses, "spawn"> {
  if (!sandbox?.children || sandbox.level === "off") return processes;
  const level = sandbox.level;
  async function spawn(
    command: string,
    args: readonly string[],
    options: SpawnOptions,
  ): Promise<HostProcess> {
    const wrapped = sandbox!.wrap(level, {
      roots: children.roots,
      cwd: options.cwd,
      program: command,
      args,
      ...(children.writable ? { writable: children.writable } : {}),
    });
    if (!wrapped) return processes.spawn(command, args, options);
    let child: HostProcess;
    try {
      child = await processes.spawn(wrapped.program, wrapped.args, options);
    } catch (error) {
      await wrapped.cleanup?.();
      throw error;
    }
    child.exited.finally(() => wrapped.cleanup?.()).catch(() => {});
    return child;
  }
  return {
    spawn: spawn as {
      (
        command: string,
        args: readonly string[],
        options: SpawnOptions & { readonly stdin: "piped" },
      ): Promise<PipedHostProcess>;
      (command: string, args: readonly string[], options: SpawnOptions): Promise<HostProcess>;
    },
  };
}
