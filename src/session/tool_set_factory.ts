import type { Logger } from "../log/logger.ts";
import type { Tool } from "../tools/tool.ts";
import type { SessionCleanups } from "./session_disposer.ts";

/** What a {@link ToolSetFactory} is told about the session it makes tools for. */
export interface SessionToolsInfo {
  /** The session id. */
  readonly sessionId: string;
  /** The session's working directory (canonical). */
  readonly cwd: string;
  /** The session's other workspace roots (canonical). */
  readonly additionalDirectories: readonly string[];
  /**
   * Where to register the clean-up of what the tools hold (processes, network connections): it
   * runs when the session is closed or deleted, when its connection ends and at shutdown.
   */
  readonly disposer: SessionCleanups;
  /** The session's logger: its lines carry the connection's id. */
  readonly logger?: Logger;
}

/**
 * Makes the tools of one session, when it is created, loaded or resumed. The session builds its
 * `ToolSet` (src/tools/tool_set.ts) from them: names are exact, and when two tools share a name
 * the first keeps it (the later one is refused with a warning).
 */
export type ToolSetFactory = (
  info: SessionToolsInfo,
) => readonly Tool[] | Promise<readonly Tool[]>;
