/**
 * The permission modes a session runs under. A mode is the first thing the policy
 * (`./policy.ts`) asks about a tool call; the session pins one per prompt.
 *
 * @module
 */

/**
 * A session's permission mode: `ask` asks before edits and commands, `auto` runs everything,
 * `read-only` refuses edits and commands.
 */
export type PermissionMode = "ask" | "auto" | "read-only";

/** All permission modes, in the order clients are shown them. */
export const PERMISSION_MODES: readonly PermissionMode[] = ["ask", "auto", "read-only"];
