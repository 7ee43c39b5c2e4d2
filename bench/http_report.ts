/**
 * The HTTP section of `bench/RESULTS.md`, from the figures `bench/http.ts` measured.
 *
 * @module
 */
import { fixed, ratioText, table, type Tally, thousands } from "./format.ts";
import {
  HTTP_TARGETS,
  type HttpBenchCounts,
  httpOutOfStartup,
  type HttpResult,
  type HttpStartupGraph,
} from "./http.ts";

/** One runtime's row inputs. */
export interface HttpReportRow {
  readonly runtime: string;
  readonly http: HttpResult | undefined;
  /** The start-up section's spawn → `initialize` medians. */
  readonly startup: { readonly ours: number; readonly bare: number } | undefined;
  /** Whether the HTTP phase failed (its error is in the report's Errors). */
  readonly failed: boolean;
}

function kib(bytes: number): string {
  return `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KiB`;
}

/** What {@link renderHttpSection} renders. */
export interface HttpSectionOptions {
  /** One per runtime. */
  readonly rows: readonly HttpReportRow[];
  /** The start-up graphs, or an error message. */
  readonly graph: HttpStartupGraph | string;
  /** The counts of the run. */
  readonly counts: HttpBenchCounts;
  /** Counts the section's targets. */
  readonly tally: Tally;
}

/** The intro and the throughput part. */
function renderThroughput({ rows, counts, tally }: HttpSectionOptions): string {
  const first = rows.find((row) => row.http)?.http;
  const throughputRows = rows.map(({ runtime, http, failed }) => {
    const t = http?.throughput;
    const ratio = t === undefined ? undefined : t.sse.median / t.stdio.median;
    const pass = ratio === undefined ? undefined : ratio >= HTTP_TARGETS.throughputRatio;
    return [
      runtime,
      thousands(t?.sse.median),
      thousands(t?.stdio.median),
      ratioText(ratio),
      `≥ ${HTTP_TARGETS.throughputRatio}×`,
      tally.verdict(pass, failed && t === undefined),
      thousands(t?.ws.median),
      ratioText(t === undefined ? undefined : t.ws.median / t.stdio.median),
      t === undefined
        ? "n/a"
        : `${thousands(t.chunks.sse)} / ${thousands(t.chunks.ws)} / ${thousands(t.chunks.stdio)}`,
    ];
  });
  return [
    "## HTTP transport (`serve --http`)",
    "",
    "Ours is started as `serve --http --port 0` (its address read from the `listening on <url>` " +
    "line on stderr) and driven on the RFD profile `/acp` by lean clients in this bench process " +
    "(Deno). SSE: `fetch` for the `POST`s and the `DELETE`, and each stream a `GET` on a TCP " +
    "connection of its own, read by a minimal reader (chunked transfer coding undone, " +
    "TextDecoder, line split; each `data:` line is a message). Deno's `fetch` hands its reader " +
    "one read per HTTP chunk and the server sends one chunk per event, so at tens of thousands " +
    "of events a second a `fetch` reader, not the server, would set the pace; a socket read " +
    "takes whatever has arrived. WebSocket: Deno's global `WebSocket`. Stdio: the same line " +
    "reader on the child's stdout. Every client counts `agent_message_chunk` updates by a " +
    "substring, without parsing them, and parses every other message, so it does the same small " +
    "work per message on each transport. Each server gets its own data directory under " +
    "`.bench-tmp/`, removed after.",
    "",
    `### Update throughput: one prompt answered by ${
      counts.chunks.toLocaleString("en-US")
    } \`agent_message_chunk\` notifications over SSE, WebSocket and stdio ` +
    "(notifications/s, higher is better)",
    "",
    table(
      [
        "runtime",
        "SSE",
        "stdio",
        "SSE ÷ stdio",
        "target",
        "result",
        "WebSocket",
        "WebSocket ÷ stdio",
        "chunks seen SSE / WS / stdio",
      ],
      throughputRows,
    ),
    "",
    "The throughput section's workload: `--stream --model scripted` with one script step of " +
    `${counts.chunks.toLocaleString("en-US")} text deltas per prompt; median of ` +
    `${first?.throughput.runs ?? "n/a"} prompt(s) per transport after a warm-up prompt each. ` +
    "Stdio: ours over stdio in its own process. SSE: one connection to a `serve --http` process " +
    "(`POST` of `initialize`, the connection stream, `session/new`, the session stream; the " +
    "prompt is a `POST` answered `202`, and its answer comes last on the session stream). " +
    "WebSocket: a second connection to the same server, one message per frame; no target. The " +
    "three take turns prompt by prompt, the order rotating. Time runs from sending the prompt to " +
    "its answer. The stdio server coalesces a burst of messages into few pipe writes; the SSE " +
    "body of the SDK's `AcpServer` hands its reader one event per read, so each update is an " +
    "HTTP chunk of its own; over WebSocket each message is a frame, which `ws` (the Node.js " +
    "listener) writes with a `socket.write` of its own.",
  ].join("\n");
}

/** The many-connections part. */
function renderConcurrency({ rows, counts, tally }: HttpSectionOptions): string {
  const first = rows.find((row) => row.http)?.http;
  const concurrencyRows = rows.map(({ runtime, http, failed }) => {
    const c = http?.concurrency;
    const pass = c === undefined ? undefined : c.p99Ms <= HTTP_TARGETS.p99LatencyMs;
    return [
      runtime,
      c === undefined ? "n/a" : `${c.completed} / ${c.connections}`,
      fixed(c?.p50Ms, 1),
      fixed(c?.p99Ms, 1),
      fixed(c?.maxMs, 1),
      `≤ ${HTTP_TARGETS.p99LatencyMs} ms`,
      tally.verdict(pass, failed && c === undefined),
      fixed(c?.wallMs, 0),
      fixed(c?.modelMs, 0),
      fixed(c?.openMs, 0),
      fixed(c?.peakRssMib, 1),
    ];
  });
  const c = first?.concurrency;
  return [
    `### ${
      counts.connections.toLocaleString("en-US")
    } connections at once, each streaming one turn from the fake model (ms)`,
    "",
    table(
      [
        "runtime",
        "turns completed",
        "p50 delta → client",
        "p99",
        "max",
        "target (p99)",
        "result",
        "wall time",
        "one turn's stream alone",
        `open ${counts.connections} connections`,
        "server peak RSS (MiB)",
      ],
      concurrencyRows,
    ),
    "",
    "One `serve --http` process started with `--config <file> --model fake/coder --mode auto " +
    "--stream` on the fake OpenAI-compatible server of `tests/_helpers/fake_llm_server.ts`, run " +
    `in this bench process on 127.0.0.1. After a warm-up turn on one connection, ` +
    `${counts.connections} SSE clients open a connection and a session each, all at once (the ` +
    "open column), then all send their prompt at once. Each turn's model answer is one SSE " +
    `response of ${counts.deltas} text deltas, the fake server pausing ${counts.chunkDelayMs} ms ` +
    "before each item, so one turn's stream alone takes " +
    `${c === undefined ? "n/a" : fixed(c.modelMs, 0)} ms. Each delta's text is the time the ` +
    "fake server writes it (`performance.now()` of this process, taken by the item's getter " +
    "right before its `res.write`); a delta's latency is when a client received the " +
    "`agent_message_chunk` carrying it minus that stamp: the agent reading it off its model " +
    "response, relaying it as a `session/update` onto the session's SSE stream, and this " +
    "process reading it, in the same event loop as the fake server and every other client. " +
    `Every turn must end \`end_turn\` with all ${counts.deltas} deltas received, else the ` +
    "section fails. Wall time: every prompt sent → the last answer. Peak RSS: the server's " +
    "VmHWM after the turns (the whole life of the process, warm-up included).",
  ].join("\n");
}

/** The idle-memory part. */
function renderIdle({ rows, counts, tally }: HttpSectionOptions): string {
  const idleRows = rows.map(({ runtime, http, failed }) => {
    const i = http?.idle;
    const pass = i?.kibPerConnection === undefined
      ? undefined
      : i.kibPerConnection <= HTTP_TARGETS.idleKibPerConnection;
    return [
      runtime,
      fixed(i?.baseRssMib, 1),
      fixed(i?.openRssMib, 1),
      fixed(i?.kibPerConnection, 0),
      `≤ ${HTTP_TARGETS.idleKibPerConnection} KiB`,
      tally.verdict(pass, failed && i === undefined),
      fixed(i?.stdioKibPerSession, 0),
      i === undefined ? "n/a" : `${fixed(i.openMs.median, 2)} (${fixed(i.openMs.max, 1)})`,
      fixed(i?.exitMs, 0),
    ];
  });
  return [
    `### Idle memory per open connection (${counts.idleConnections} connections)`,
    "",
    table(
      [
        "runtime",
        "RSS with none (MiB)",
        `RSS with ${counts.idleConnections} (MiB)`,
        "KiB per connection",
        "target",
        "result",
        "KiB per session over stdio",
        "open one connection (ms, max)",
        `exit after SIGTERM with ${counts.idleConnections} open (ms)`,
      ],
      idleRows,
    ),
    "",
    "A `serve --http` process on the echo model. A warm-up connection opens a session, runs one " +
    "prompt and ends (`DELETE`); once the server has logged the connection closed, VmRSS is read " +
    `(with none). Then ${counts.idleConnections} connections are opened one after another, each ` +
    "with one session and both SSE streams (the connection's and the session's) held open, " +
    "nothing running, and VmRSS is read again at once. KiB per connection: the difference ÷ " +
    `${counts.idleConnections}: the agent's connection and session state, the SDK server's ` +
    "connection, two open response streams and their sockets, and whatever garbage the opening " +
    "left that has not been collected yet. Per session over stdio: the same number of sessions " +
    "opened on one stdio connection of an agent process (after the same warm-up), VmRSS growth " +
    "÷ sessions: the part of a connection's figure that is its session. Open one connection: " +
    "`initialize` → `session/new` answered → the session stream's headers, median (and max) of " +
    "the sequential openings. Then SIGTERM: the server ends every stream and exits (the last " +
    "column).",
  ].join("\n");
}

/** The start-up part. */
function renderStartup({ rows, graph, tally }: HttpSectionOptions): string {
  const startupRows = rows.map(({ runtime, startup, http }) => {
    const bundle = runtime === "node";
    const found = typeof graph === "string"
      ? []
      : bundle
      ? graph.bundleHttpInputs
      : graph.sourceHttpModules;
    const listed = found.length === 0
      ? "none"
      : found.map(({ name, bytes }) =>
        `\`${name}\`${bytes === undefined ? "" : ` (${kib(bytes)})`}`
      )
        .join(", ");
    return [
      runtime,
      fixed(startup?.ours, 1),
      fixed(startup?.bare, 1),
      ratioText(startup === undefined ? undefined : startup.ours / startup.bare),
      http?.bundleStartup === undefined
        ? "n/a"
        : `${fixed(http.bundleStartup.withHttp.median, 1)} / ${
          fixed(http.bundleStartup.withoutHttp.median, 1)
        } (${
          ratioText(http.bundleStartup.withHttp.median / http.bundleStartup.withoutHttp.median)
        })`,
      typeof graph === "string"
        ? "n/a"
        : bundle
        ? `start-up reads ${graph.bundleFiles} files, ${kib(graph.bundleBytes)}; HTTP code in ` +
          `them: ${listed}; ${kib(graph.lazyHttpBytes)} of HTTP code in on-demand chunks`
        : `${listed}, of ${graph.sourceModules} modules`,
      "no HTTP library or transport module",
      tally.verdict(typeof graph === "string" ? undefined : httpOutOfStartup(graph, bundle), false),
    ];
  });
  return [
    "### Start-up of the stdio server with the HTTP transport in the code base",
    "",
    table(
      [
        "runtime",
        "spawn → initialize ours",
        "bare",
        "ratio",
        "dist/cli.js / without HTTP",
        "HTTP code in the start-up graph",
        "target",
        "result",
      ],
      startupRows,
    ),
    "",
    "The first three columns repeat the start-up section (same processes), spawn → `initialize`, which has no target (the " +
    "start-up target is on spawn → `session/new`). " +
    "Before the HTTP transport (bench/RESULTS.md at commit fe61faa) the same ratios were 1.39× " +
    "(deno), 1.24× (node) and 1.33× (bun) on this machine. Sources (Deno, Bun run `mod.ts`): " +
    "`deno info --json mod.ts`, closure over static imports plus the entry's and the runtime " +
    "dispatch's `import()`s; the other `import()`s are lazy. HTTP code: `src/transport/http/`, " +
    "the runtime listeners (`src/runtime/*_http.ts`, `http_common.ts`), `hono`, " +
    "`@hono/node-server`, `ws` and the SDK's `experimental/server`. Target: none of it at " +
    "start-up but at most `src/transport/http/http_security.ts`, the loopback checks the CLI " +
    "runs on its settings (`isLoopback`, `loopbackHosts`, now imported by `src/cli/cli.ts` only " +
    "when `--http` or a host is set), a module with no imports. " +
    (typeof graph === "string"
      ? `The graphs could not be read: ${graph}.`
      : (graph.lazyEdges.length === 0
        ? "No lazy import leads to the HTTP code. "
        : `The rest is reached only through ${
          graph.lazyEdges.map((edge) => `\`${edge}\``).join(", ")
        }, run by \`serve --http\` alone. `) +
        "Node.js runs `dist/cli.js`, an esbuild bundle with code splitting (the build script's " +
        "options with a metafile): start-up reads `cli.js` and the chunks it imports " +
        "statically; the HTTP code sits in chunks loaded by `serve --http`. The " +
        "`dist/cli.js / without HTTP` column times spawn → `initialize` of that build against " +
        "the same build with `src/transport/http/http_transport.ts` and " +
        `\`src/runtime/node_http.ts\` left out (${kib(graph.withoutHttp.bytes)}), alternating, ` +
        `median of ${
          rows.find((row) => row.http?.bundleStartup)?.http?.bundleStartup?.runs ?? "n/a"
        } after a warm-up.`),
  ].join("\n");
}

/**
 * Renders the HTTP section of `bench/RESULTS.md`; its targets are counted in `options.tally`.
 *
 * @example
 * ```ts ignore
 * const text = renderHttpSection({ rows, graph, counts, tally });
 * ```
 */
export function renderHttpSection(options: HttpSectionOptions): string {
  return [
    renderThroughput(options),
    "",
    renderConcurrency(options),
    "",
    renderIdle(options),
    "",
    renderStartup(options),
  ].join("\n");
}
