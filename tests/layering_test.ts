/**
 * Keeps the folders of `src/` layered: every import between two folders, type-only imports and
 * lazy `import("./x" + ".ts")` sites included, is an edge of the folder graph, and that graph has
 * no cycle. The files at the top of `src/` count as one folder, `src/*.ts`; a sub-folder belongs
 * to its top folder (`src/protocol/handlers/` is `protocol`), except the ones in
 * {@link OWN_LAYERS}. A failure names each cycle with one `file:line` per edge, so the import to
 * move is the one printed.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { posix } from "node:path";
import { fileURLToPath } from "node:url";
import { analyze, listTs } from "./_helpers/import_scanner.ts";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

/** The name of the folder that stands for the files at the top of `src/`. */
const TOP = "src/*.ts";

/** Folder → imported folder → the `src/file.ts:line` of each import along that edge. */
type FolderGraph = Map<string, Map<string, string[]>>;

/**
 * Sub-folders that are a layer of their own. `src/transport/http/` is the HTTP adapter, which sits
 * above the protocol layer (DESIGN.md: Http → Protocol), while the rest of `src/transport/` is the
 * stream contract below it.
 */
const OWN_LAYERS: readonly string[] = ["transport/http"];

/** The folder of a path relative to `src/`: its top folder, an own layer, or {@link TOP}. */
function folderOf(path: string): string {
  const own = OWN_LAYERS.find((folder) => path.startsWith(`${folder}/`));
  if (own !== undefined) return own;
  const slash = path.indexOf("/");
  return slash === -1 ? TOP : path.slice(0, slash);
}

/** Adds the folder edges of one file (a path relative to `src/`) to `graph`. */
function addFile(graph: FolderGraph, path: string, source: string): void {
  const from = folderOf(path);
  for (const site of analyze(source).imports) {
    if (!site.specifier.startsWith(".")) continue;
    const target = posix.normalize(posix.join(posix.dirname(path), site.specifier));
    if (target.startsWith("../")) continue; // outside src/, e.g. ../mod.ts
    const to = folderOf(target);
    if (to === from) continue;
    const targets = graph.get(from) ?? new Map<string, string[]>();
    graph.set(from, targets);
    const sites = targets.get(to) ?? [];
    targets.set(to, sites);
    sites.push(`src/${path}:${site.line}`);
  }
}

/** The shortest path of folders from `start` to `goal` in `graph`, or undefined. */
function shortestPath(graph: FolderGraph, start: string, goal: string): string[] | undefined {
  const previous = new Map<string, string>([[start, start]]);
  const queue = [start];
  while (queue.length > 0) {
    const at = queue.shift() as string;
    if (at === goal) {
      const path = [goal];
      while (path[0] !== start) path.unshift(previous.get(path[0] as string) as string);
      return path;
    }
    for (const next of graph.get(at)?.keys() ?? []) {
      if (previous.has(next)) continue;
      previous.set(next, at);
      queue.push(next);
    }
  }
  return undefined;
}

/**
 * The folder cycles of `graph`, each as `a → b → … → a`, with the first import site of every edge.
 * Every edge that lies on a cycle appears in at least one of them (the shortest cycle through it).
 */
function cycles(graph: FolderGraph): string[] {
  const found = new Map<string, string>();
  for (const [from, targets] of graph) {
    for (const to of targets.keys()) {
      const back = shortestPath(graph, to, from);
      if (back === undefined) continue;
      const ring = [from, ...back.slice(0, -1)];
      const first = ring.indexOf([...ring].sort()[0] as string);
      const rotated = [...ring.slice(first), ...ring.slice(0, first)];
      const key = rotated.join(" → ");
      if (found.has(key)) continue;
      const steps = rotated.map((folder, index) => {
        const next = rotated[(index + 1) % rotated.length] as string;
        const site = graph.get(folder)?.get(next)?.[0];
        return `  ${folder} → ${next}  (${site})`;
      });
      found.set(key, `${key} → ${rotated[0]}\n${steps.join("\n")}`);
    }
  }
  return [...found.keys()].sort().map((key) => found.get(key) as string);
}

/** The folder graph of some files given as `[path relative to src/, source]`. */
function graphOf(files: ReadonlyArray<readonly [string, string]>): FolderGraph {
  const graph: FolderGraph = new Map();
  for (const [path, source] of files) addFile(graph, path, source);
  return graph;
}

Deno.test("cycles() names each folder cycle with one file:line per edge", () => {
  const graph = graphOf([
    ["a/x.ts", 'import { b } from "../b/y.ts";'],
    ["b/y.ts", '// a comment\nimport type { A } from "../a/x.ts";'],
    ["b/z.ts", 'const c = await import("../c/w" + ".ts");'],
    ["c/w.ts", 'export { b } from "../b/y.ts";\nimport { top } from "../top.ts";'],
    ["top.ts", 'import { d } from "./d/v.ts";'],
    ["d/v.ts", 'import { top } from "../top.ts"; import { sub } from "./sub/u.ts";'],
    ["d/sub/u.ts", 'import { v } from "../v.ts"; import { m } from "../../../mod.ts";'],
    ["transport/http/h.ts", 'import type { P } from "../../p/q.ts";'],
    ["p/q.ts", 'import type { S } from "../transport/s.ts";'],
  ]);
  assert.deepEqual(cycles(graph), [
    "a → b → a\n  a → b  (src/a/x.ts:1)\n  b → a  (src/b/y.ts:2)",
    "b → c → b\n  b → c  (src/b/z.ts:1)\n  c → b  (src/c/w.ts:1)",
    `d → ${TOP} → d\n  d → ${TOP}  (src/d/v.ts:1)\n  ${TOP} → d  (src/top.ts:1)`,
  ]);
  assert.deepEqual(cycles(graphOf([["a/x.ts", 'import "../b/y.ts";'], ["b/y.ts", ""]])), []);
});

Deno.test("src/ folders import each other without a cycle (type-only and lazy imports included)", async () => {
  const files = await listTs(SRC);
  assert.ok(files.length > 10, `expected to find the sources under ${SRC}`);
  const graph: FolderGraph = new Map();
  for (const file of files) addFile(graph, file, await readFile(`${SRC}${file}`, "utf8"));
  assert.ok(graph.get("session")?.has("agent"), "scan missed the session → agent edge");
  const found = cycles(graph);
  assert.ok(found.length === 0, `folder cycles in src/:\n${found.join("\n")}`);
});

/**
 * Each folder's layer: a folder imports only folders of a lower rank, so that what the drawing in
 * `docs/architecture.md` says is the direction of every import, not only the absence of cycles.
 * Equal ranks may not import each other either. From the top: the runtime entries and the CLI
 * compose; the HTTP adapter and delegation sit on the server and the protocol; the server
 * composes the protocol handlers over the session core; below the session come compaction, the
 * turn loop and the MCP client, then tools and stores, then config, models and permission, the
 * transport's message contract, the host, the telemetry seam (every layer reports to it), the
 * logger and the helpers.
 */
const RANKS: Readonly<Record<string, number>> = {
  runtime: 100,
  cli: 90,
  "transport/http": 80,
  delegation: 80,
  server: 70,
  protocol: 60,
  session: 50,
  compaction: 45,
  agent: 40,
  mcp: 40,
  tools: 30,
  store: 30,
  config: 25,
  git: 22,
  llm: 20,
  permission: 20,
  transport: 15,
  sandbox: 12,
  host: 10,
  telemetry: 8,
  log: 5,
  util: 0,
};

/**
 * The modules of `src/transport/` that are its contract: the `Stream` of messages with its
 * optional fast paths, and the ACP types. Only the layers that build streams (the CLI, the
 * runtime entries and the HTTP adapter) may import the NDJSON framer and the memory pair
 * themselves.
 */
const TRANSPORT_CONTRACT: readonly string[] = ["transport/acp.ts", "transport/acp_types.ts"];

/** The layers that may reach past the transport's contract into its implementations. */
const STREAM_BUILDERS: readonly string[] = ["runtime", "cli", "transport/http"];

/** Every import of `files` that breaks {@link RANKS} or the transport's seam, as `file:line`. */
function layerBreaks(files: ReadonlyArray<readonly [string, string]>): string[] {
  const breaks: string[] = [];
  for (const [path, source] of files) {
    const from = folderOf(path);
    for (const site of analyze(source).imports) {
      if (!site.specifier.startsWith(".")) continue;
      const target = posix.normalize(posix.join(posix.dirname(path), site.specifier));
      if (target.startsWith("../")) continue;
      const to = folderOf(target);
      if (to === from) continue;
      const where = `src/${path}:${site.line}`;
      const [rankFrom, rankTo] = [RANKS[from], RANKS[to]];
      if (rankFrom === undefined || rankTo === undefined) {
        breaks.push(`${where}: ${rankFrom === undefined ? from : to} has no rank in RANKS`);
      } else if (rankTo >= rankFrom) {
        breaks.push(`${where}: ${from} (${rankFrom}) imports ${to} (${rankTo}), a layer above`);
      } else if (
        to === "transport" && !TRANSPORT_CONTRACT.includes(target) &&
        !STREAM_BUILDERS.includes(from)
      ) {
        breaks.push(`${where}: ${from} imports ${target}, past the transport's contract`);
      }
    }
  }
  return breaks;
}

Deno.test("layerBreaks() names an import upwards, one between equals and one past a seam", () => {
  const breaks = layerBreaks([
    ["session/a.ts", 'import type { S } from "../server/s.ts";'],
    ["agent/b.ts", 'import { m } from "../mcp/m.ts";\nimport { t } from "../tools/t.ts";'],
    ["protocol/c.ts", 'import type { N } from "../transport/nd_json_stream.ts";'],
    ["server/d.ts", 'import type { S } from "../transport/acp.ts";'],
    ["cli/e.ts", 'import { ndJsonStream } from "../transport/nd_json_stream.ts";'],
    ["nowhere/f.ts", 'import { u } from "../util/u.ts";'],
  ]);
  assert.deepEqual(breaks, [
    "src/session/a.ts:1: session (50) imports server (70), a layer above",
    "src/agent/b.ts:1: agent (40) imports mcp (40), a layer above",
    "src/protocol/c.ts:1: protocol imports transport/nd_json_stream.ts, past the transport's contract",
    "src/nowhere/f.ts:1: nowhere has no rank in RANKS",
  ]);
});

Deno.test("src/ folders import only the layers below them, and the transport only through its contract", async () => {
  const paths = await listTs(SRC);
  const files = await Promise.all(
    paths.map(async (path) => [path, await readFile(`${SRC}${path}`, "utf8")] as const),
  );
  const breaks = layerBreaks(files);
  assert.deepEqual(breaks, [], `imports against the layers of src/:\n${breaks.join("\n")}`);
});
