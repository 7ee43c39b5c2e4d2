/**
 * Reading a number of a JSON text as it was written: JSON-RPC ids beyond 2^53 (or with a
 * fraction) lose digits in `JSON.parse`, and the transports echo them as the client wrote them.
 *
 * @module
 */

/** Where a number value is in a JSON text: `text.slice(start, end)` is the number as written. */
export interface NumberSpan {
  /** Index of its first character. */
  readonly start: number;
  /** Index after its last character. */
  readonly end: number;
}

const NUMBER = /-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?/y;
const SPACE = /[ \t\n\r]*/y;

/**
 * Finds the number value of a top-level key of a JSON object, as written (the last occurrence
 * wins, as in `JSON.parse`). Linear in the text's length.
 *
 * @example The id of a request, digit for digit
 * ```ts
 * import assert from "node:assert/strict";
 * import { topLevelNumberSpan } from "./json_number.ts";
 * const text = '{"jsonrpc":"2.0","id":12345678901234567890,"method":"x"}';
 * const span = topLevelNumberSpan(text, "id");
 * assert(span && text.slice(span.start, span.end) === "12345678901234567890");
 * ```
 *
 * @param text A JSON object's text (already known to parse)
 * @param key The key
 * @returns Where the number is, or `undefined` if the key is absent or its value is no number
 */
export function topLevelNumberSpan(text: string, key: string): NumberSpan | undefined {
  let depth = 0;
  let index = 0;
  let found: NumberSpan | undefined;
  while (index < text.length) {
    const char = text[index] as string;
    if (char === '"') {
      const start = index;
      index++;
      while (index < text.length && text[index] !== '"') index += text[index] === "\\" ? 2 : 1;
      index++;
      if (depth !== 1) continue;
      const colon = skipSpace(text, index);
      if (text[colon] !== ":") continue;
      if (JSON.parse(text.slice(start, index)) !== key) continue;
      const at = skipSpace(text, colon + 1);
      NUMBER.lastIndex = at;
      const number = NUMBER.exec(text);
      found = number ? { start: at, end: at + number[0].length } : undefined;
      index = at;
      continue;
    }
    if (char === "{" || char === "[") depth++;
    else if (char === "}" || char === "]") depth--;
    index++;
  }
  return found;
}

/**
 * The text of the number value of a top-level key of a JSON object, as written.
 *
 * @param text A JSON object's text (already known to parse)
 * @param key The key
 * @returns The number's text, or `undefined` if the key is absent or its value is no number
 */
export function topLevelNumber(text: string, key: string): string | undefined {
  const span = topLevelNumberSpan(text, key);
  return span && text.slice(span.start, span.end);
}

function skipSpace(text: string, from: number): number {
  SPACE.lastIndex = from;
  SPACE.exec(text);
  return SPACE.lastIndex;
}
