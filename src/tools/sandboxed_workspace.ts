/**
 * A session's workspace with its commands confined by the server's sandbox at the session's
 * level.
 *
 * @module
 */
import type { CommandSandbox } from "../sandbox/command_sandbox.ts";
import { refusalLine, type SandboxLevel } from "../sandbox/sandbox.ts";
import type { CommandResult, RunCommandOptions, Workspace } from "./workspace.ts";

/**
 * `workspace` with each command run through `sandbox` at `level`: the sandbox's argv goes to the
 * workspace (the host, or the client's terminal), its clean-up runs once the command has ended,
 * and a failure that the sandbox caused gets one line saying so after the command's own output.
 * At `off` the workspace is returned as it is.
 *
 * @example Confining a session's commands
 * ```ts ignore
 * const confined = sandboxedWorkspace(workspace, sandbox, "workspace-write", ["/w"]);
 * const result = await confined.runCommand("touch /etc/x", options);
 * // result.output ends with "[sandbox workspace-write: writes outside the workspace …]"
 * ```
 *
 * @param workspace The session's workspace
 * @param sandbox The server's sandbox
 * @param level The session's level
 * @param roots The session's canonical roots, the cwd first
 * @returns The confined workspace
 */
export function sandboxedWorkspace(
  workspace: Workspace,
  sandbox: CommandSandbox,
  level: SandboxLevel,
  roots: readonly string[],
): Workspace {
  if (level === "off") return workspace;
  return {
    readTextFile: (path, options) => workspace.readTextFile(path, options),
    writeTextFile: (path, content, options) => workspace.writeTextFile(path, content, options),
    async runCommand(command: string, options: RunCommandOptions): Promise<CommandResult> {
      // Throws rather than run a command unconfined that was meant to be confined.
      const wrapped = sandbox.wrap(level, {
        roots,
        cwd: options.cwd,
        program: "/bin/sh",
        args: ["-c", command],
      });
      if (!wrapped) return workspace.runCommand(command, options);
      let result: CommandResult;
      try {
        result = await workspace.runCommand(command, {
          ...options,
          argv: { program: wrapped.program, args: wrapped.args },
        });
      } finally {
        await wrapped.cleanup?.();
      }
      const line = refusalLine(level, sandbox.network, result);
      if (line === undefined) return result;
      const output = result.output === "" || result.output.endsWith("\n")
        ? `${result.output}${line}`
        : `${result.output}\n${line}`;
      return { ...result, output };
    },
  };
}
