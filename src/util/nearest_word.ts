/**
 * The nearest of some words to a mistyped one, for "did you mean" hints.
 *
 * @module
 */

/**
 * The edit distance between two strings (insertions, deletions, substitutions and swaps of two
 * neighbours each count one), or a number above `limit` once it is clear the distance exceeds it.
 */
function distance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  // Three rows of the optimal string alignment table: two back, one back, this one.
  let older: number[] = [];
  let previous: number[] = Array.from({ length: b.length + 1 }, (_, index) => index);
  for (let i = 1; i <= a.length; i++) {
    const row: number[] = [i];
    let smallest = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(
        (previous[j] ?? 0) + 1,
        (row[j - 1] ?? 0) + 1,
        (previous[j - 1] ?? 0) + cost,
      );
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, (older[j - 2] ?? 0) + 1);
      }
      row.push(value);
      smallest = Math.min(smallest, value);
    }
    if (smallest > limit) return limit + 1;
    older = previous;
    previous = row;
  }
  return previous[b.length] ?? limit + 1;
}

/**
 * The word of `words` closest to `typed`, when one is close enough to be what was meant: at most
 * two edits away and fewer edits than a third of its length (one edit for words of up to five
 * characters). Ties go to the first word listed.
 *
 * @example A mistyped flag
 * ```ts
 * import assert from "node:assert/strict";
 * import { nearestWord } from "./nearest_word.ts";
 * assert.equal(nearestWord("--mdoel", ["--mode", "--model", "--stream"]), "--model");
 * assert.equal(nearestWord("--colour", ["--mode", "--model"]), undefined);
 * ```
 *
 * @param typed What was typed
 * @param words The words it may have meant
 * @returns The nearest word, or `undefined` when none is close
 */
export function nearestWord(typed: string, words: Iterable<string>): string | undefined {
  const limit = Math.min(2, Math.max(1, Math.floor(typed.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const word of words) {
    const value = distance(typed, word, limit);
    if (value < bestDistance) {
      best = word;
      bestDistance = value;
    }
  }
  return best;
}
