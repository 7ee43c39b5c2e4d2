import type { ToolDisplay } from "./tool.ts";

/** Largest diff shown whole (old and new text together), in UTF-16 code units. */
export const MAX_DIFF_CHARS = 256 * 1024;

/** Unchanged lines kept around the changed region of an excerpt. */
const CONTEXT_LINES = 3;

/**
 * What a client is shown of a change to a file: the whole before and after when they are small;
 * for a large file, only the changed region with a few lines around it (a diff of the excerpt,
 * and a note saying which lines it covers); when even that is too large, a note alone. Clients
 * get every update of a turn, and the session log records it, so a diff of a 30 MB file must not
 * travel whole.
 *
 * @example A small change is shown whole
 * ```ts
 * import assert from "node:assert/strict";
 * import { diffDisplay } from "./_diff.ts";
 * const [diff] = diffDisplay("/w/a.txt", "a\n", "b\n");
 * assert.deepEqual(diff, { type: "diff", path: "/w/a.txt", oldText: "a\n", newText: "b\n" });
 * ```
 *
 * @param path The file's absolute path
 * @param oldText Its content before (`null` for a new file)
 * @param newText Its content after
 * @returns The display items
 */
export function diffDisplay(path: string, oldText: string | null, newText: string): ToolDisplay[] {
  const before = oldText ?? "";
  if (before.length + newText.length <= MAX_DIFF_CHARS) {
    return [{ type: "diff", path, oldText, newText }];
  }
  const size = `${before.length + newText.length} characters`;
  if (oldText === null) {
    return [{ type: "text", text: `New file ${path} is too large to show as a diff (${size})` }];
  }
  // The changed region: past the common prefix and before the common suffix, widened to whole
  // lines plus some context.
  const shortest = Math.min(before.length, newText.length);
  let head = 0;
  while (head < shortest && before.charCodeAt(head) === newText.charCodeAt(head)) head++;
  let tail = 0;
  while (
    tail < shortest - head &&
    before.charCodeAt(before.length - 1 - tail) === newText.charCodeAt(newText.length - 1 - tail)
  ) tail++;
  let start = head;
  while (start > 0 && before.charCodeAt(start - 1) !== 10) start--;
  for (let lines = 0; start > 0 && lines < CONTEXT_LINES; lines++) {
    start--;
    while (start > 0 && before.charCodeAt(start - 1) !== 10) start--;
  }
  let oldEnd = before.length - tail;
  let newEnd = newText.length - tail;
  const skipLine = (): void => {
    while (oldEnd < before.length && before.charCodeAt(oldEnd) !== 10) {
      oldEnd++;
      newEnd++;
    }
    if (oldEnd < before.length) {
      oldEnd++;
      newEnd++;
    }
  };
  if (oldEnd > 0 && before.charCodeAt(oldEnd - 1) !== 10) skipLine();
  for (let lines = 0; lines < CONTEXT_LINES; lines++) skipLine();
  const oldExcerpt = before.slice(start, oldEnd);
  const newExcerpt = newText.slice(start, newEnd);
  if (oldExcerpt.length + newExcerpt.length > MAX_DIFF_CHARS) {
    return [{
      type: "text",
      text: `The change to ${path} is too large to show as a diff (${size})`,
    }];
  }
  const first = lineOf(before, start);
  const last = first + lineOf(oldExcerpt, Math.max(0, oldExcerpt.length - 1)) - 1;
  return [
    { type: "diff", path, oldText: oldExcerpt, newText: newExcerpt },
    {
      type: "text",
      text:
        `The diff shows lines ${first}–${last} of ${path} (the whole file is too large to show)`,
    },
  ];
}

/** The 1-based line of an offset. */
function lineOf(text: string, offset: number): number {
  let line = 1;
  for (let at = text.indexOf("\n"); at !== -1 && at < offset; at = text.indexOf("\n", at + 1)) {
    line++;
  }
  return line;
}
