/**
 * The permission policy: from the session's mode, the tool's effect and the session's
 * remembered answers, whether a tool call runs, is refused, or asks the user. Pure: no I/O,
 * no state; the gate (`./gate.ts`) acts on what it says.
 *
 * @module
 */
import type { PermissionMode } from "./mode.ts";

/**
 * What a tool does to the world, which decides whether permission modes let it run: `read`
 * only reads; `write` changes files; `execute` runs commands; `external` acts through another
 * program (an MCP server's tool not marked read-only).
 */
export type ToolEffect = "read" | "write" | "execute" | "external";

/** An answer to a permission question, as ACP's option kinds name them. */
export type PermissionAnswer = "allow_once" | "allow_always" | "reject_once" | "reject_always";

/** What the policy says about one tool call. */
export type PolicyDecision =
  | { readonly action: "allow" }
  | { readonly action: "deny"; readonly reason: string }
  | { readonly action: "ask" };

/** Remembered "always" answers of one session, by tool name. */
export type PermissionGrants = ReadonlyMap<string, "allow_always" | "reject_always">;

/**
 * Decides whether a tool call runs, is refused, or needs the user's permission.
 *
 * - `auto`: everything runs.
 * - `read-only`: reading and searching run; edits and commands are refused.
 * - `ask`: reading and searching run; edits and commands ask, unless an "always" answer for the
 *   tool was given earlier in the session.
 *
 * @example The ask mode
 * ```ts
 * import assert from "node:assert/strict";
 * import { decidePermission } from "./policy.ts";
 * assert.equal(decidePermission("ask", "write_file", "write", new Map()).action, "ask");
 * assert.equal(decidePermission("ask", "read_file", "read", new Map()).action, "allow");
 * ```
 *
 * @param mode The session's permission mode
 * @param tool The tool's name
 * @param effect What the tool does
 * @param grants The session's remembered answers
 * @returns The decision
 */
export function decidePermission(
  mode: PermissionMode,
  tool: string,
  effect: ToolEffect,
  grants: PermissionGrants,
): PolicyDecision {
  if (effect === "read" || mode === "auto") return { action: "allow" };
  if (mode === "read-only") {
    return {
      action: "deny",
      reason: `The read-only permission mode refused ${tool}: it ${
        effect === "write"
          ? "changes files"
          : effect === "execute"
          ? "runs commands"
          : "is not marked read-only"
      }. Ask the user to switch the mode to "ask" or "auto" if this is needed.`,
    };
  }
  const remembered = grants.get(tool);
  if (remembered === "allow_always") return { action: "allow" };
  if (remembered === "reject_always") {
    return { action: "deny", reason: `The user refused ${tool} for the rest of this session.` };
  }
  return { action: "ask" };
}
