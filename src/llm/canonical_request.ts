/**
 * The canonical form of a model request, what a replay matches recorded requests on: the body
 * with what varies by design replaced (the session's roots and the data directory by
 * placeholders, dates and times, UUIDs such as session ids, tool-call ids by their order of
 * appearance) and its object keys sorted; and, for a request that matches nothing, the first
 * field where it differs from the nearest recorded one.
 *
 * @module
 */

/** The paths a request's text may hold that differ from one checkout or machine to another. */
export interface CanonicalPaths {
  /** The session's roots (the cwd first): `<root>`, `<root1>`, … */
  readonly roots?: readonly string[];
  /** The server's data directory: `<data>`. */
  readonly dataDir?: string;
  /** The user's home directory: `<home>`. */
  readonly home?: string;
}

const UUID = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
const TIMESTAMP =
  /\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?\b/g;
const DATE = /\b\d{4}-\d{2}-\d{2}\b/g;
/** The keys whose string values are tool-call ids, on every wire format we speak. */
const ID_KEYS: ReadonlySet<string> = new Set([
  "id",
  "tool_call_id",
  "tool_use_id",
  "call_id",
  "toolCallId",
]);

/**
 * The canonical form of a request body: placeholders for paths, times and ids, keys sorted.
 *
 * @example Two checkouts, two days, two sessions: one form
 * ```ts
 * import assert from "node:assert/strict";
 * import { canonicalBody } from "./canonical_request.ts";
 * const body = (root: string, day: string, call: string) => ({
 *   model: "gpt-5",
 *   messages: [
 *     { role: "system", content: `Today's date: ${day}. Workspace: ${root}` },
 *     { role: "assistant", tool_calls: [{ id: call, function: { name: "read_file" } }] },
 *     { tool_call_id: call, role: "tool", content: `${root}/a.txt: alpha` },
 *   ],
 * });
 * assert.deepEqual(
 *   canonicalBody(body("/home/ada/p", "2026-12-02", "call_1"), { roots: ["/home/ada/p"] }),
 *   canonicalBody(body("/ci/work/p", "2027-01-15", "call_x9"), { roots: ["/ci/work/p"] }),
 * );
 * ```
 *
 * @param body The parsed JSON body
 * @param paths The paths to replace
 * @returns The canonical value (plain JSON, keys in order)
 */
export function canonicalBody(body: unknown, paths: CanonicalPaths = {}): unknown {
  const replacements = pathReplacements(paths);
  const ids = new Map<string, string>();
  const text = (value: string): string =>
    replaceEach(value, replacements).replace(TIMESTAMP, "<time>").replace(DATE, "<date>")
      .replace(UUID, "<uuid>");
  const walk = (value: unknown, key: string | undefined): unknown => {
    if (typeof value === "string") {
      if (key !== undefined && ID_KEYS.has(key)) {
        let id = ids.get(value);
        if (id === undefined) ids.set(value, id = `<id${ids.size + 1}>`);
        return id;
      }
      return text(value);
    }
    if (Array.isArray(value)) return value.map((item) => walk(item, undefined));
    if (value !== null && typeof value === "object") {
      const out: Record<string, unknown> = {};
      for (const name of Object.keys(value).sort()) {
        const item = (value as Record<string, unknown>)[name];
        if (item !== undefined) out[name] = walk(item, name);
      }
      return out;
    }
    return value;
  };
  return walk(body, undefined);
}

/** The path replacements, longest first (a root inside another is replaced before it). */
function pathReplacements(paths: CanonicalPaths): Array<[string, string]> {
  const pairs: Array<[string, string]> = [];
  (paths.roots ?? []).forEach((root, index) => {
    if (root.length > 1) pairs.push([root, index === 0 ? "<root>" : `<root${index}>`]);
  });
  if (paths.dataDir && paths.dataDir.length > 1) pairs.push([paths.dataDir, "<data>"]);
  if (paths.home && paths.home.length > 1) pairs.push([paths.home, "<home>"]);
  return pairs.sort((a, b) => b[0].length - a[0].length);
}

/**
 * The first field, in key order, where two canonical values differ, as a path
 * (`messages[3].content`); `undefined` when they are equal. A field only one has counts as a
 * difference at its path.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { firstDifference } from "./canonical_request.ts";
 * const a = { messages: [{ content: "hi" }, { content: "read a.txt" }], model: "m" };
 * const b = { messages: [{ content: "hi" }, { content: "read b.txt" }], model: "m" };
 * assert.equal(firstDifference(a, b), "messages[1].content");
 * assert.equal(firstDifference(a, a), undefined);
 * ```
 *
 * @param a One value
 * @param b The other
 * @returns The path of the first difference
 */
export function firstDifference(a: unknown, b: unknown): string | undefined {
  return differences(a, b, "", 1)[0];
}

/**
 * How many leaves two canonical values differ in (up to `limit`): the distance a miss's nearest
 * recorded request is chosen by.
 *
 * @param a One value
 * @param b The other
 * @param limit Stop counting here
 * @returns The count
 */
export function differenceCount(a: unknown, b: unknown, limit = 1_000): number {
  return differences(a, b, "", limit).length;
}

function differences(a: unknown, b: unknown, path: string, limit: number): string[] {
  const found: string[] = [];
  const visit = (x: unknown, y: unknown, at: string): void => {
    if (found.length >= limit) return;
    if (Array.isArray(x) && Array.isArray(y)) {
      const length = Math.max(x.length, y.length);
      for (let index = 0; index < length && found.length < limit; index++) {
        if (index >= x.length || index >= y.length) found.push(`${at}[${index}]`);
        else visit(x[index], y[index], `${at}[${index}]`);
      }
      return;
    }
    if (isObject(x) && isObject(y)) {
      const keys = [...new Set([...Object.keys(x), ...Object.keys(y)])].sort();
      for (const key of keys) {
        if (found.length >= limit) return;
        const next = at === "" ? key : `${at}.${key}`;
        if (!(key in x) || !(key in y)) found.push(next);
        else visit(x[key], y[key], next);
      }
      return;
    }
    if (x !== y) found.push(at === "" ? "(the body)" : at);
  };
  visit(a, b, path);
  return found;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === "object" && !Array.isArray(value);
}

/**
 * Replaces the paths in every string of a value by their placeholders (`<root>`, `<root1>`,
 * `<data>`, `<home>`), and nothing else: what a cassette stores, so that it holds no local path
 * and replays at another one.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { placePaths, restorePaths } from "./canonical_request.ts";
 * const stored = placePaths({ path: "/home/ada/p/a.txt" }, { roots: ["/home/ada/p"] });
 * assert.deepEqual(stored, { path: "<root>/a.txt" });
 * assert.deepEqual(restorePaths(stored, { roots: ["/ci/p"] }), { path: "/ci/p/a.txt" });
 * ```
 *
 * @param value A JSON value
 * @param paths The paths to replace
 * @returns The value with placeholders
 */
export function placePaths(value: unknown, paths: CanonicalPaths): unknown {
  const replacements = pathReplacements(paths);
  if (replacements.length === 0) return value;
  return mapStrings(value, (text) => replaceEach(text, replacements));
}

/**
 * Puts paths back for their placeholders (the inverse of {@link placePaths}, with the paths of
 * the run that replays).
 *
 * @param value A JSON value with placeholders
 * @param paths The paths to put in
 * @returns The value with paths
 */
export function restorePaths(value: unknown, paths: CanonicalPaths): unknown {
  const replacements = pathReplacements(paths).map(([path, placeholder]): [string, string] => [
    placeholder,
    path,
  ]);
  if (replacements.length === 0) return value;
  // `<root1>` and `<root>` never clash: `<root>` ends at its `>`.
  return mapStrings(value, (text) => replaceEach(text, replacements));
}

/** `text` with each pair's first string replaced by its second, in order. */
function replaceEach(text: string, pairs: ReadonlyArray<readonly [string, string]>): string {
  let out = text;
  for (const [from, to] of pairs) out = out.replaceAll(from, to);
  return out;
}

/**
 * A copy of a JSON value with `map` applied to every string (keys stay).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mapStrings } from "./canonical_request.ts";
 * assert.deepEqual(mapStrings({ a: ["x", 1] }, (text) => text.toUpperCase()), { a: ["X", 1] });
 * ```
 *
 * @param value A JSON value
 * @param map What each string becomes
 * @returns The copy
 */
export function mapStrings(value: unknown, map: (text: string) => string): unknown {
  if (typeof value === "string") return map(value);
  if (Array.isArray(value)) return value.map((item) => mapStrings(item, map));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = mapStrings(item, map);
    return out;
  }
  return value;
}
