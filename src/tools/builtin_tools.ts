/**
 * The built-in tools: the workspace tools and the model's plan.
 *
 * @module
 */
import { editFileTool } from "./edit_file.ts";
import { findFilesTool } from "./find_files.ts";
import { listDirectoryTool } from "./list_directory.ts";
import { readFileTool } from "./read_file.ts";
import { runCommandTool } from "./run_command.ts";
import { searchTextTool } from "./search_text.ts";
import type { Tool } from "./tool.ts";
import { updatePlanTool } from "./update_plan.ts";
import { writeFileTool } from "./write_file.ts";

const BUILTIN_TOOLS: readonly Tool[] = Object.freeze([
  readFileTool,
  writeFileTool,
  editFileTool,
  listDirectoryTool,
  findFilesTool,
  searchTextTool,
  runCommandTool,
  updatePlanTool,
]);

/**
 * The eight built-in tools, in the order models see them: read_file, write_file, edit_file,
 * list_directory, find_files, search_text, run_command, update_plan. Every path they take is
 * confined to the session's roots.
 *
 * @example Listing the tools
 * ```ts
 * import assert from "node:assert/strict";
 * import { builtinTools } from "./builtin_tools.ts";
 * assert.deepEqual(builtinTools().map((tool) => tool.name), [
 *   "read_file", "write_file", "edit_file", "list_directory",
 *   "find_files", "search_text", "run_command", "update_plan",
 * ]);
 * ```
 *
 * @returns The tools (a frozen array shared by all callers)
 */
export function builtinTools(): readonly Tool[] {
  return BUILTIN_TOOLS;
}
