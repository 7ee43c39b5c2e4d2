import type { PathChecks } from "./path_checks.ts";
import type { Logger } from "../log/logger.ts";

/** Largest AGENTS.md read into the system prompt, in bytes. */
export const MAX_INSTRUCTIONS_BYTES = 64 * 1024;

/**
 * The project instructions of a workspace: its `AGENTS.md`, when there is one no larger than
 * {@link MAX_INSTRUCTIONS_BYTES}. A file that cannot be read is logged and skipped.
 *
 * @param host Reads the file (the server's path checks)
 * @param cwd The session's canonical working directory
 * @param logger Told of a file skipped
 * @returns The text, or `undefined`
 */
export async function readInstructions(
  host: PathChecks,
  cwd: string,
  logger: Logger,
): Promise<string | undefined> {
  const file = `${cwd.replace(/\/+$/, "")}/AGENTS.md`;
  try {
    const info = await host.stat(file);
    if (!info?.isFile) return undefined;
    if (info.size > MAX_INSTRUCTIONS_BYTES) {
      logger.warn("AGENTS.md is too large; ignoring it", { file, size: info.size });
      return undefined;
    }
    return await host.readTextFile(file);
  } catch (error) {
    logger.warn("cannot read AGENTS.md", { file, error });
    return undefined;
  }
}
