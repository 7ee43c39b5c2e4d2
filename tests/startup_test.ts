/**
 * Guards what start-up loads before it can answer `initialize` (see src/runtime/main.ts): the
 * session side, the built-in tools (Node.js), the host's file system and processes, the model
 * providers, the MCP client, the HTTP transport, PostgreSQL, re2js, the Prometheus metrics
 * (`prom-client`), the OpenTelemetry traces (`@opentelemetry/*`) and the commands other than
 * `serve` are imported on first use, on every runtime.
 *
 * - Deno and Bun run the sources: `deno info --json mod.ts` lists every module `deno run mod.ts`
 *   reads before it runs (its graph follows `import("literal")` too), so none of the lazy modules
 *   may be in it at all; and the start-up graph proper must not hold them either.
 * - Node.js runs `dist/cli.js`: the files start-up reads (the entry and the chunks it imports
 *   statically, from the build script's own options) must not contain them, and must be two.
 *
 * @module
 */
import assert from "node:assert/strict";
import { build, type Metafile, stop } from "../scripts/esbuild.ts";
import { type SourceStartupGraph, sourceStartupGraph } from "../bench/startup_graph.ts";
import { cliBuildOptions } from "../scripts/build.ts";
import { findDeno } from "./_helpers/runtime_binaries.ts";

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Source modules start-up must not load, as paths from the repository root. */
const LAZY_SOURCES: readonly RegExp[] = [
  // observer_limits.ts holds the constants `initialize` advertises, apart for that reason.
  /^src\/session\/(?!observer_limits\.ts$)/,
  /^src\/mcp\/mcp_(hub|connection|tool|schema)\.ts$/,
  /^src\/server\/connection_sessions\.ts$/,
  /^src\/protocol\/session_handlers\.ts$/,
  /^src\/protocol\/handlers\/session_/,
  /^src\/host\/(node_processes|process_guard)\.ts$/,
  /^src\/transport\/http\//,
  /^src\/store\/postgres\//,
  /^src\/llm\/(openai_chat|anthropic_messages|http_provider_core|event_stream|post_json|provider_errors|sse|cassette|cassette_fetch|canonical_request)\.ts$/,
  /^src\/cli\/(models_command|copy_sessions_command|cassettes)\.ts$/,
  /^src\/config\/json_text\.ts$/,
  /^src\/runtime\/\w+_http\.ts$/,
  /^src\/telemetry\/(prometheus_telemetry|otel_telemetry|otel_tracing)\.ts$/,
  /^src\/cli\/metrics_endpoint\.ts$/,
];

/** Packages and built-ins start-up must not load. */
const LAZY_PACKAGES: readonly string[] = [
  "re2js",
  "hono",
  "@hono/node-server",
  "@modelcontextprotocol/client",
  "postgres",
  "ws",
  "prom-client",
  "@opentelemetry/api",
  "@opentelemetry/core",
  "@opentelemetry/resources",
  "@opentelemetry/sdk-trace",
  "@opentelemetry/exporter-trace-otlp-http",
  "@opentelemetry/exporter-trace-otlp-proto",
];
const LAZY_BUILTINS: readonly string[] = ["node:fs", "node:fs/promises", "node:child_process"];

/** What of `paths` (root-relative sources, `npm:` packages, `node:` built-ins) must be lazy. */
function lazyAmong(paths: Iterable<string>): string[] {
  const found: string[] = [];
  for (const path of paths) {
    const npm = /^npm:\/?((?:@[^/]+\/)?[^@/]+)/.exec(path)?.[1];
    if (
      LAZY_SOURCES.some((pattern) => pattern.test(path)) ||
      (npm !== undefined && LAZY_PACKAGES.includes(npm)) || LAZY_BUILTINS.includes(path)
    ) {
      found.push(path);
    }
  }
  return found.sort();
}

/**
 * The modules `roots` import as code, transitively (type-only imports are not code); `dynamic`:
 * `import("literal")` too.
 */
function codeClosure(
  graph: SourceStartupGraph,
  roots: readonly string[],
  dynamic: boolean,
): Set<string> {
  const found = new Set<string>();
  const pending = [...roots];
  while (pending.length > 0) {
    const specifier = pending.pop() as string;
    if (found.has(specifier)) continue;
    found.add(specifier);
    for (const dependency of graph.modules.get(specifier)?.dependencies ?? []) {
      const target = dependency.code?.specifier;
      if (target !== undefined && (dynamic || !dependency.isDynamic)) {
        pending.push(graph.redirects[target] ?? target);
      }
    }
  }
  return found;
}

Deno.test("deno run mod.ts reads none of the lazy modules before it starts", async () => {
  const graph = await sourceStartupGraph(ROOT, findDeno(ROOT), () => false);
  const relative = (specifier: string): string => specifier.replace(`file://${ROOT}/`, "");
  // What `deno run` reads (and whose npm packages it resolves) before the first line runs: the
  // closure over code imports, `import("literal")` included (type-only imports are not read). A
  // lazy import written `import("./x.ts")` would put x.ts and all it imports here.
  const read = codeClosure(graph, [`file://${ROOT}/mod.ts`], true);
  // Only source files count here: built-ins are not read, and a package imported by name is only
  // resolved (its import must stay a literal to work once published to JSR); both count where
  // they run, in the start-up graph below.
  const readFiles = [...read].filter((specifier) => /^file:/.test(specifier));
  assert.deepEqual(lazyAmong(readFiles.map(relative)), []);
  assert.deepEqual(lazyAmong([...graph.startup].map(relative)), []);
  // The entry and the runtime dispatch are there, and so is what answers `initialize`.
  for (const needed of ["src/runtime/main.ts", "src/cli/cli.ts", "src/protocol/routes.ts"]) {
    assert.ok(graph.startup.has(`file://${ROOT}/${needed}`), needed);
  }
});

Deno.test("bun mod.ts loads no node:stream before it answers initialize (over 10 ms on Bun)", async () => {
  const graph = await sourceStartupGraph(ROOT, findDeno(ROOT), () => false);
  // What Bun runs: mod.ts and what it imports statically, then the dispatch and the Bun entry.
  const loaded = codeClosure(graph, [
    `file://${ROOT}/mod.ts`,
    `file://${ROOT}/src/runtime/main.ts`,
    `file://${ROOT}/src/runtime/bun.ts`,
  ], false);
  assert.ok(loaded.has(`file://${ROOT}/src/cli/cli.ts`), "the Bun entry imports the CLI");
  assert.deepEqual([...loaded].filter((specifier) => specifier.startsWith("node:stream")), []);
});

Deno.test("node dist/cli.js reads two files at start-up, none of them lazy code", async () => {
  let metafile: Metafile;
  try {
    // The build script's options; nothing is written.
    ({ metafile } = await build({
      ...cliBuildOptions(`${ROOT}/`, `${ROOT}/dist`),
      write: false,
      metafile: true,
    }));
  } finally {
    await stop();
  }
  const outputs = metafile.outputs;
  const entry = Object.keys(outputs).find((path) => path.endsWith("/cli.js"));
  assert.ok(entry, "the build has a cli.js");
  const startup = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const path = pending.pop() as string;
    if (startup.has(path)) continue;
    startup.add(path);
    for (const imported of outputs[path]?.imports ?? []) {
      if (imported.kind === "import-statement" && !imported.external) pending.push(imported.path);
    }
  }
  // cli.js and the one chunk of everything start-up runs (scripts/build.ts, startupChunkPlugin).
  assert.equal(startup.size, 2, [...startup].join(", "));
  const inputs: string[] = [];
  const builtins = new Set<string>();
  let localeBytes = 0;
  for (const file of startup) {
    for (const [input, info] of Object.entries(outputs[file]?.inputs ?? {})) {
      if (info.bytesInOutput === 0) continue;
      const npm = /node_modules\/(?:\.deno\/[^/]+\/node_modules\/)?((?:@[^/]+\/)?[^/]+)/.exec(
        input,
      );
      inputs.push(npm ? `npm:${npm[1]}` : input);
      if (input.includes("/zod/v4/locales/")) localeBytes += info.bytesInOutput;
    }
    for (const imported of outputs[file]?.imports ?? []) {
      if (imported.external && imported.kind === "import-statement") builtins.add(imported.path);
    }
  }
  assert.deepEqual(lazyAmong(inputs), []);
  assert.deepEqual(lazyAmong(builtins), []);
  // The built-in tools come with the first session on Node.js (mod.ts exports them elsewhere).
  assert.deepEqual(
    inputs.filter((input) => /^src\/tools\/(builtin_tools|read_file)\.ts$/.test(input)),
    [],
  );
  // zod's English messages only (the SDK's); all locales would be about 260 KiB.
  assert.ok(localeBytes < 10_000, `${localeBytes} bytes of zod locales`);
});
