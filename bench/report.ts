/**
 * Renders `bench/RESULTS.md` from one {@link Results} object: a section per phase (the phase
 * modules with sections of their own render them: `bench/mcp.ts`, `bench/http_report.ts`,
 * `bench/llm_breakdown.ts`, `bench/delegation.ts`), every target's result cell written by one
 * {@link Tally} so that the report's "Result" line counts them all.
 *
 * @module
 */
import { SYNC_DELAY_MS } from "../src/store/jsonl_session_store.ts";
import { renderDelegationSection } from "./delegation.ts";
import { renderSessionForkSection } from "./fork_bench.ts";
import { renderWorktreeSection } from "./worktree_bench.ts";
import { renderScaleSection } from "./scale.ts";
import { fixed, ratioOf, ratioText, table, Tally, thousands } from "./format.ts";
import { httpBenchCounts } from "./http.ts";
import { renderHttpSection } from "./http_report.ts";
import { breakdownCounts, renderBreakdownSections } from "./llm_breakdown.ts";
import { LLM_TURN, llmTurnStepBytes } from "./llm_turn.ts";
import { renderMcpSection } from "./mcp.ts";
import type { Results, RuntimeResult } from "./results.ts";
import type { AppendMode, PhaseName } from "./settings.ts";
import { renderStartupProfiles } from "./startup_profile.ts";
import { STORE_BENCH } from "./store_bench.ts";
import { ratioSpread } from "./stats.ts";

/** The targets of the sections rendered here. */
const TARGETS = {
  /** Spawn → first `session/new` answered, ours / bare built the same way. */
  startupRatio: 1.15,
  /** Prompt round trip on `--store memory:`, ours / bare. */
  roundTripRatio: 1.3,
  /** Prompt round trip on the durable store, ours / bare. */
  durableRoundTripRatio: 1.8,
  throughputRatio: 0.75,
  exitMs: 100,
  sessionListRatio: 2,
  /** `session/load` in a fresh server / the bare agent sending as many updates, fresh. */
  sessionLoadRatio: 1,
  /** Many `session/new` in a row: ours p50 ≤ this × bare p50 … */
  sessionNewRatio: 2,
  /** … plus this many ms. */
  sessionNewSlackMs: 0.5,
  /** Exit after stdin EOF with many open sessions (ms). */
  exitWithSessionsMs: 100,
} as const;

/** How the append modes are named in the report. */
const APPEND_MODE_NAMES: Readonly<Record<AppendMode, string>> = {
  awaited: "`sync: true`, awaited one by one",
  burst: "`sync: true`, in bursts (group commit)",
  nosync: "`sync: false`",
};

/** Whether phase `name` failed on this runtime (its error is in the report's Errors). */
function phaseFailed(result: RuntimeResult, name: PhaseName): boolean {
  return result.errors.some((e) => e.startsWith(`${name}:`));
}

function mib(bytes: number | undefined): string {
  return bytes === undefined ? "" : `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

/** A spread of per-round ratios as `p25 – p75 (min – max)`. */
function spreadText(ratios: readonly number[] | undefined): string {
  if (ratios === undefined || ratios.length === 0) return "n/a";
  const r = ratioSpread(ratios);
  return `${fixed(r.low, 2)} – ${fixed(r.high, 2)} (${fixed(r.min, 2)} – ${fixed(r.max, 2)})`;
}

/** The median of per-round ratios, or undefined when there are none. */
function medianRatio(ratios: readonly number[] | undefined): number | undefined {
  return ratios === undefined || ratios.length === 0 ? undefined : ratioSpread(ratios).median;
}

/** The start-up rows: each runtime, then the compiled binaries (from the builds phase). */
function startupRows(run: Results, tally: Tally): string[][] {
  const row = (
    label: string,
    figures: {
      sessionNew?: { ours: number; bare: number };
      initialize?: { ours: number; bare: number };
      ratios?: readonly number[];
    },
    failed: boolean,
  ): string[] => [
    label,
    fixed(figures.sessionNew?.ours, 1),
    fixed(figures.sessionNew?.bare, 1),
    ratioText(medianRatio(figures.ratios)),
    spreadText(figures.ratios),
    `≤ ${TARGETS.startupRatio}×`,
    tally.spreadVerdict(
      figures.ratios === undefined || figures.ratios.length === 0
        ? undefined
        : ratioSpread(figures.ratios),
      TARGETS.startupRatio,
      failed,
    ),
    fixed(figures.initialize?.ours, 1),
    fixed(figures.initialize?.bare, 1),
  ];
  const labels: Readonly<Record<string, string>> = {
    deno: "deno (source vs source)",
    node: "node (bundle vs bundle)",
    bun: "bun (source vs source)",
  };
  const rows = run.runtimes.map((r) => {
    const s = r.startup;
    return row(labels[r.runtime] ?? r.runtime, {
      ...(s === undefined ? {} : {
        sessionNew: s.sessionNewMs,
        initialize: s.initializeMs,
        ratios: s.sessionNewRatios,
      }),
    }, phaseFailed(r, "start-up"));
  });
  if (typeof run.builds !== "string") {
    const ours = run.builds.find((b) => b.kind === "ours" && b.key === "binary");
    const bare = run.builds.find((b) => b.kind === "bare" && b.key === "binary");
    if (ours !== undefined && bare !== undefined) {
      rows.push(row("compiled (`bun build --compile`, both)", {
        sessionNew: { ours: ours.sessionNewMs, bare: bare.sessionNewMs },
        initialize: { ours: ours.initializeMs, bare: bare.initializeMs },
        ...(ours.sessionNewRatios === undefined ? {} : { ratios: ours.sessionNewRatios }),
      }, false));
    }
  }
  return rows;
}

/** Start-up and the exit after stdin EOF. */
function renderStartupSection(run: Results, tally: Tally): string {
  const { settings } = run;
  const results = run.runtimes;
  const exitRows = results.map((r) => {
    const s = r.startup;
    const pass = s === undefined ? undefined : s.exitMs.ours <= TARGETS.exitMs;
    const max = (values: number[]): number | undefined =>
      values.length === 0 ? undefined : Math.max(...values);
    return [
      r.runtime,
      fixed(s?.exitMs.ours, 1),
      fixed(s?.exitMs.bare, 1),
      ratioText(ratioOf(s?.exitMs.ours, s?.exitMs.bare)),
      `≤ ${TARGETS.exitMs} ms`,
      tally.verdict(pass),
      fixed(max(r.exitMs.ours), 1),
      fixed(max(r.exitMs.bare), 1),
    ];
  });
  return [
    "## Start-up: spawn → first `session/new` answered (ms, median of " +
    `${settings.startupRuns} interleaved rounds after a warm-up)`,
    "",
    table(
      [
        "runtime (ours vs bare)",
        "ours spawn → session/new",
        "bare",
        "ratio (median of rounds)",
        "ratio p25 – p75 (min – max)",
        "target",
        "result",
        "ours spawn → initialize",
        "bare spawn → initialize",
      ],
      startupRows(run, tally),
    ),
    "",
    "What a client waits for its first session: spawn, `initialize`, then `session/new` as " +
    "soon as `initialize` is answered, timed from the spawn to the `session/new` response. " +
    "Ours (a fresh, empty data directory each run) against the bare SDK agent " +
    "(`bench/bare_agent.ts`) built the same way: Deno and Bun run the TypeScript source of " +
    "both, Node.js runs both as one minified esbuild bundle (it cannot run the source), and " +
    "the compiled row is ours compiled as `deno task compile` makes it (`scripts/compile.ts`, " +
    "`bun build --compile --minify --bytecode`) against the bare agent compiled the same way " +
    "(its figures come from the start-up-by-build rotation below). Each round runs ours and " +
    "bare back to back, the order alternating; the ratio is taken round by round, so the two " +
    "share the machine's noise. The target is judged on the spread of those per-round ratios, " +
    "their interquartile range (p25 – p75): pass when all of it is at or under the target, " +
    "**FAIL** when all of it is over, met within noise when it straddles the target. Spawn → " +
    "initialize is reported beside it, with no target.",
    "",
    "## Exit after stdin EOF (ms, median of the start-up runs)",
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "target (ours)", "result", "ours max", "bare max"],
      exitRows,
    ),
    "",
    "The max columns cover every process of the runtime, including the round-trip and throughput ones.",
  ].join("\n");
}

/** The first `session/new` after `initialize`. */
function renderFirstSessionNew(run: Results): string {
  const { settings } = run;
  const results = run.runtimes;
  const firstSessionRows = results.map((r) => {
    const s = r.startup;
    return [
      r.runtime,
      fixed(s?.firstSessionNewMs.ours, 2),
      fixed(s?.firstSessionNewMs.bare, 2),
      ratioText(ratioOf(s?.firstSessionNewMs.ours, s?.firstSessionNewMs.bare)),
      `${fixed(s?.firstSessionNewMaxMs.ours, 2)} / ${fixed(s?.firstSessionNewMaxMs.bare, 2)}`,
    ];
  });
  return [
    `### The first \`session/new\` after \`initialize\` (median of the ${settings.startupRuns} start-up runs; no target)`,
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "max ours / bare"],
      firstSessionRows,
    ),
    "",
    "The start-up runs' `session/new`, timed from its request (sent once `initialize` was " +
    "answered) to its response: what a client waits for its first session on a freshly " +
    "started agent. Ours gets a fresh, empty data directory each run (`ACP_HARNESS_HOME`), so " +
    "this is the first session the store ever creates there. Ours answers once its session " +
    "side (the code the session methods need, imported after the `initialize` answer) and the " +
    "built-in tools are loaded; the session is written to the store after the answer (the " +
    "README's durable sessions), so what is left is loading that code: about a hundred source " +
    "modules on Deno and Bun, a chunk of the bundle on Node.js. Loading it before " +
    "`initialize` is answered would move the same time into start-up. Its old absolute target " +
    "(≤ 2 ms) is dropped (issue 35): the start-up table's spawn → `session/new` figure, the sum " +
    "a client waits for its first session, carries the target instead.",
  ].join("\n");
}

/** Many `session/new` in a row on one server. */
function renderSessionsInARow(run: Results, tally: Tally): string {
  const { settings } = run;
  const results = run.runtimes;
  const sessionLimit = (bare: number | undefined): number | undefined =>
    bare === undefined ? undefined : TARGETS.sessionNewRatio * bare + TARGETS.sessionNewSlackMs;
  const sessionsRows = results.map((r) => {
    const s = r.sessions;
    const limit = sessionLimit(s?.p50Ms.bare);
    const pass = s === undefined || limit === undefined ? undefined : s.p50Ms.ours <= limit;
    return [
      r.runtime,
      fixed(s?.p50Ms.ours, 3),
      fixed(s?.p50Ms.bare, 3),
      ratioText(ratioOf(s?.p50Ms.ours, s?.p50Ms.bare)),
      `≤ ${TARGETS.sessionNewRatio}× bare + ${TARGETS.sessionNewSlackMs} ms (${fixed(limit, 3)})`,
      tally.verdict(pass),
      `${fixed(s?.p99Ms.ours, 3)} / ${fixed(s?.p99Ms.bare, 3)}`,
    ];
  });
  return [
    `### ${
      settings.sessionsPerRun.toLocaleString("en-US")
    } \`session/new\` in a row on one server ` +
    `(${settings.sessionRuns} runs, latencies pooled)`,
    "",
    table(
      [
        "runtime",
        "ours p50",
        "bare p50",
        "ratio",
        "target (ours p50)",
        "result",
        "p99 ours / bare",
      ],
      sessionsRows,
    ),
    "",
    "The cost of creating a session on an agent that is already warm, as a client opening many " +
    "does. Each run starts ours (a fresh data directory) and bare, sends `initialize` to both, " +
    `then ${settings.sessionsPerRun.toLocaleString("en-US")} \`session/new\` to each, one ` +
    `at a time, ours and bare alternating in blocks of ${settings.sessionBlock}; each is ` +
    "timed from its request to its response. The sessions stay open (idle) for the next " +
    "section. Ours answers once the cwd is checked (a stat and a realpath), its `AGENTS.md` " +
    "looked for and the session built; the session's lock (a hard link to another of the " +
    "process's locks), its log (one exclusive create, opened off the main thread, holding the " +
    "header and the initial model and mode) and its index line are written right after the " +
    "answer, while the next request arrives. Creating a file costs up to a millisecond of " +
    "kernel time on this machine's file system, several times the bare " +
    "agent's whole answer, so that work still weighs on the next `session/new` of a client " +
    "that opens them back to back; the data directory is under the bench's `.bench-tmp/`.",
  ].join("\n");
}

/** The exit after stdin EOF with those sessions open. */
function renderExitWithSessions(run: Results, tally: Tally): string {
  const { settings } = run;
  const results = run.runtimes;
  const exitSessionsRows = results.map((r) => {
    const s = r.sessions;
    const pass = s === undefined ? undefined : s.exitMs.ours <= TARGETS.exitWithSessionsMs;
    return [
      r.runtime,
      fixed(s?.exitMs.ours, 1),
      fixed(s?.exitMs.bare, 1),
      ratioText(ratioOf(s?.exitMs.ours, s?.exitMs.bare)),
      `≤ ${TARGETS.exitWithSessionsMs} ms`,
      tally.verdict(pass),
      `${fixed(s?.exitMaxMs.ours, 1)} / ${fixed(s?.exitMaxMs.bare, 1)}`,
    ];
  });
  return [
    `## Exit after stdin EOF with ${settings.sessionsPerRun.toLocaleString("en-US")} open ` +
    `sessions (ms, median of ${settings.sessionRuns} runs)`,
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "target (ours)", "result", "max ours / bare"],
      exitSessionsRows,
    ),
    "",
    "The servers of the previous section, once all their sessions are open: stdin closed → " +
    "process exit, one server at a time (the other idle). Ours closes every session before it " +
    "exits, so this is how shutdown grows with the number of sessions: each session's index " +
    "line that is due (one write for all of them; none here, as these sessions were never " +
    "used), and its lock file (an `lstat` and an unlink each, in bursts of a few milliseconds).",
  ].join("\n");
}

/** The first `session/new`, many in a row, and the exit with them open. */
function renderSessionNewSections(run: Results, tally: Tally): string {
  return [
    `## \`session/new\` on a running server (ms)`,
    "",
    renderFirstSessionNew(run),
    "",
    renderSessionsInARow(run, tally),
    "",
    renderExitWithSessions(run, tally),
  ].join("\n");
}

/** The prompt round trip. */
function renderRoundTripSection(run: Results, tally: Tally): string {
  const { settings } = run;
  const results = run.runtimes;
  const roundTripRows = results.map((r) => {
    const t = r.roundTrip;
    const failed = phaseFailed(r, "round trip");
    const memory = t?.blockRatios.memory;
    const durable = t?.blockRatios.durable;
    const judged = (ratios: readonly number[] | undefined, target: number): string =>
      tally.spreadVerdict(
        ratios === undefined || ratios.length === 0 ? undefined : ratioSpread(ratios),
        target,
        failed,
      );
    return [
      r.runtime,
      fixed(t?.memory.p50Ms, 3),
      fixed(t?.p50Ms.ours, 3),
      fixed(t?.p50Ms.bare, 3),
      ratioText(medianRatio(memory)),
      spreadText(memory),
      `≤ ${TARGETS.roundTripRatio}×`,
      judged(memory, TARGETS.roundTripRatio),
      ratioText(medianRatio(durable)),
      spreadText(durable),
      `≤ ${TARGETS.durableRoundTripRatio}×`,
      judged(durable, TARGETS.durableRoundTripRatio),
      fixed(t === undefined ? undefined : t.p50Ms.ours - t.memory.p50Ms, 3),
      `${fixed(t?.p99Ms.ours, 2)} / ${fixed(t?.memory.p99Ms, 2)} / ${fixed(t?.p99Ms.bare, 2)}`,
      `${thousands(t?.promptsPerSecond.ours)} / ${thousands(t?.memory.promptsPerSecond)} / ` +
      thousands(t?.promptsPerSecond.bare),
      ratioText(ratioOf(t?.promptsPerSecond.ours, t?.promptsPerSecond.bare)),
      `${fixed(t?.firstBlockP50Ms.ours, 3)} → ${fixed(t?.lastBlockP50Ms.ours, 3)}`,
      `${fixed(t?.firstBlockP50Ms.bare, 3)} → ${fixed(t?.lastBlockP50Ms.bare, 3)}`,
    ];
  });
  return [
    `## Prompt round trip: ${
      settings.prompts.toLocaleString("en-US")
    } sequential \`session/prompt\` ` +
    `calls on one session (ms)`,
    "",
    table(
      [
        "runtime",
        "ours p50 (memory:)",
        "ours p50 (durable)",
        "bare p50",
        "ratio memory: (median of rounds)",
        "memory: p25 – p75 (min – max)",
        "target (memory:)",
        "result (memory:)",
        "ratio durable (median of rounds)",
        "durable p25 – p75 (min – max)",
        "target (durable)",
        "result (durable)",
        "cost of durability p50 (ms)",
        "p99 durable / memory: / bare",
        "prompts/s durable / memory: / bare",
        "prompts/s ratio (durable)",
        "ours p50 first → last block",
        "bare p50 first → last block",
      ],
      roundTripRows,
    ),
    "",
    `After ${settings.warmupPrompts} warm-up prompts each; the three sides take turns in blocks ` +
    `of ${settings.promptBlock} (the order rotating block by block); each block of the three is ` +
    "a round, and the ratios are each round's p50 over bare's p50 in that round, summed up as " +
    "their median and spread (interquartile range, with min – max): pass when the whole range " +
    "is at or under the target, **FAIL** when it is all over, met within noise when it " +
    "straddles it. Ours runs the echo model, " +
    "which answers with an `agent_thought_chunk` and an `agent_message_chunk` (two " +
    "notifications per prompt, plus a title on the first); the bare agent sends the same " +
    "frames, so the ratio is the server's own cost. Durable: ours as shipped, on a fresh data " +
    "directory, recording every prompt in its session log (fdatasync by group commit), with " +
    `its own target (≤ ${TARGETS.durableRoundTripRatio}×). Memory: the same server with ` +
    "`--store memory:` (sessions kept in the process, nothing written), which carries the " +
    `≤ ${TARGETS.roundTripRatio}× target (the bare agent persists nothing either); the cost ` +
    "of durability (durable p50 − memory: p50) is what the log costs a prompt. The warm-up lets all reach steady state: V8 optimizes a function after a few " +
    "interrupt-budget ticks (about 67 KB of its bytecode run each, in Node.js 20), so a " +
    "function that runs once per prompt is optimized only after a few thousand prompts (the " +
    "bare agent's hot functions run many times per prompt and get there sooner); with 1,000 " +
    "warm-up prompts Node.js's ours went from 0.41 to 0.17 ms within the measured prompts. The " +
    "first → last block columns show the latency at the start and the end of the measured " +
    "prompts, as the session's history grows. Before sessions were durable " +
    "(bench/RESULTS.md at commit 78c471b) the same measurement gave 1.06-1.14x.",
  ].join("\n");
}

/** The update throughput. */
function renderThroughputSection(run: Results, tally: Tally): string {
  const { settings } = run;
  const results = run.runtimes;
  const throughputRows = results.map((r) => {
    const t = r.throughput;
    const ratio = ratioOf(t?.notificationsPerSecond.ours, t?.notificationsPerSecond.bare);
    const pass = ratio === undefined ? undefined : ratio >= TARGETS.throughputRatio;
    return [
      r.runtime,
      thousands(t?.notificationsPerSecond.ours),
      thousands(t?.notificationsPerSecond.bare),
      ratioText(ratio),
      `≥ ${TARGETS.throughputRatio}×`,
      tally.verdict(pass),
      `${thousands(t?.chunksPerPrompt.ours)} / ${thousands(t?.chunksPerPrompt.bare)}`,
    ];
  });
  return [
    `## Update throughput: one prompt answered by ${settings.chunks.toLocaleString("en-US")} ` +
    "`agent_message_chunk` notifications (notifications/s, higher is better)",
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "target", "result", "chunks seen ours / bare"],
      throughputRows,
    ),
    "",
    `Median of ${settings.throughputRuns} prompt(s) after a warm-up prompt, ours and bare ` +
    "alternating. Ours: `--stream --model scripted` with one script step of " +
    `${settings.chunks.toLocaleString("en-US")} text deltas per prompt; bare: ` +
    `\`BARE_CHUNKS=${settings.chunks}\`. Time runs from sending the prompt to its response.`,
  ].join("\n");
}

/** The LLM turn (no target). */
function renderLlmTurnSection(run: Results): string {
  const { settings } = run;
  const results = run.runtimes;
  const llmTurnRows = results.map((r) => {
    const t = r.llmTurn;
    const failed = phaseFailed(r, "LLM turn");
    return [
      r.runtime,
      fixed(t?.ms.ours, 1),
      fixed(t?.ms.bare, 1),
      ratioText(ratioOf(t?.ms.ours, t?.ms.bare)),
      failed ? "**failed** (see Errors)" : t === undefined ? "n/a" : "ok",
      `${fixed(t?.minMs.ours, 1)} – ${fixed(t?.maxMs.ours, 1)}`,
      `${fixed(t?.minMs.bare, 1)} – ${fixed(t?.maxMs.bare, 1)}`,
    ];
  });
  return [
    `## LLM turn: one turn whose model streams ${LLM_TURN.deltas.toLocaleString("en-US")} ` +
    `deltas and ${LLM_TURN.toolCalls} tool calls from the fake server (ms, median of ` +
    `${settings.llmTurnRuns} after ${settings.llmTurnWarmups} warm-up turn(s); no target)`,
    "",
    table(
      ["runtime", "ours", "bare", "ratio", "turn check", "ours min – max", "bare min – max"],
      llmTurnRows,
    ),
    "",
    "The whole turn against a bare read of the same streams, as information: its old target " +
    "(≤ 1.2× bare) gave way to the breakdown below, the agent's CPU per streamed delta and per " +
    "tool call. The model is the fake OpenAI-compatible server of `tests/_helpers/fake_llm_server.ts`, run " +
    "in this bench process on 127.0.0.1 with no per-chunk delay. Step 1 is one SSE response of " +
    `${
      LLM_TURN.deltas.toLocaleString("en-US")
    } \`content\` deltas of a few bytes each ("w0 ", "w1 ", …) and ` +
    `${LLM_TURN.toolCalls} \`read_file\` calls on a 10-line file in a temporary workspace (each ` +
    "call's arguments in two fragments), " +
    `${thousands(llmTurnStepBytes() / 1024)} KiB; step 2 is a one-delta answer. ` +
    "The fake server writes each SSE item with its own `res.write` and waits for the flush, so " +
    "each body is handed to it as one item: one write per response (after the header flush), " +
    "for both sides alike. Ours: the agent started with `--config <file> --model fake/coder " +
    "--mode auto` (committed-step mode, no `--stream`: the text reaches the client as one " +
    "`agent_message_chunk` per step); each turn opens a fresh session, queues both responses " +
    "and times `session/prompt` over stdio to its response, which must be `end_turn` with all " +
    `${LLM_TURN.toolCalls} \`tool_call_update\`s \`completed\` (else the section fails). ` +
    "Bare: a client in this bench process (Deno's fetch) that POSTs, reads the whole step-1 " +
    "stream (TextDecoder, line split, `JSON.parse` of every `data:` line, tool-call fragments " +
    "joined), then POSTs step 2 with the text and tool calls and reads it; it runs no tools and " +
    "sends no ACP frames, so the ratio is everything ours adds to the bare HTTP + SSE work: " +
    "ACP framing, history, request building, the tool calls and their updates, and its " +
    "process boundary. Ours and bare alternate turn by turn against the same server and " +
    "responses; the bare figure is the same Deno client for every runtime row (it shares this " +
    "process's event loop with the fake server, where ours runs beside it in its own process).",
  ].join("\n");
}

/** The `session/list` part of the durable sessions. */
function renderSessionListSection(run: Results, tally: Tally): string {
  const { settings } = run;
  const results = run.runtimes;
  const listRows = results.map((r) => {
    const l = r.sessionList;
    const ratio = ratioOf(l?.large.median, l?.small.median);
    const pass = ratio === undefined ? undefined : ratio <= TARGETS.sessionListRatio;
    return [
      r.runtime,
      fixed(l?.small.median, 3),
      fixed(l?.large.median, 3),
      ratioText(ratio),
      `≤ ${TARGETS.sessionListRatio}×`,
      tally.verdict(pass),
      `${fixed(l?.small.min, 3)} – ${fixed(l?.small.max, 3)}`,
      `${fixed(l?.large.min, 3)} – ${fixed(l?.large.max, 3)}`,
    ];
  });
  const pageSize = results.find((r) => r.sessionList)?.sessionList?.pageSize;
  return [
    `### \`session/list\` first page at ${
      STORE_BENCH.listSizes.map((n) => n.toLocaleString("en-US")).join(" and ")
    } stored sessions (ms, median of ${settings.listRuns} after ${settings.listWarmups} ` +
    "warm-ups each)",
    "",
    table(
      [
        "runtime",
        `${STORE_BENCH.listSizes[0].toLocaleString("en-US")} sessions`,
        `${STORE_BENCH.listSizes[1].toLocaleString("en-US")} sessions`,
        "ratio",
        "target",
        "result",
        `${STORE_BENCH.listSizes[0].toLocaleString("en-US")} min – max`,
        `${STORE_BENCH.listSizes[1].toLocaleString("en-US")} min – max`,
      ],
      listRows,
    ),
    "",
    "One server per data directory, both running at once; the calls alternate between them. " +
    `Each session is one ${STORE_BENCH.turnEvents}-event turn, spread over 60 days and 25 ` +
    "cwds. Every call is " +
    "`session/list` with no cwd and no cursor: the first page, " +
    `${pageSize === undefined ? "n/a" : pageSize} sessions on both sides (the configured page ` +
    "size; only the larger one has a `nextCursor`), so both replies are the same size. The " +
    "first warm-up call reads `index.jsonl` whole (sorting the sessions once); after that a " +
    "call stats the index file and serves the page from the sorted in-memory index, so the " +
    "cost should not grow with the number of sessions. Time runs from the request to its " +
    "response; the ratio is the larger data directory over the smaller one.",
  ].join("\n");
}

/** The `session/load` part of the durable sessions. */
function renderSessionLoadSection(run: Results, tally: Tally): string {
  const { settings } = run;
  const results = run.runtimes;
  const runs = Math.max(settings.loadRuns, 5);
  const loadRows = results.map((r) => {
    const l = r.sessionLoad;
    const ratios = l?.ratios;
    return [
      r.runtime,
      fixed(l?.load.median, 1),
      fixed(l?.bare.median, 1),
      ratioText(medianRatio(ratios)),
      spreadText(ratios),
      `≤ ${TARGETS.sessionLoadRatio}×`,
      tally.spreadVerdict(
        ratios === undefined || ratios.length === 0 ? undefined : ratioSpread(ratios),
        TARGETS.sessionLoadRatio,
        phaseFailed(r, "session/load"),
      ),
      `${fixed(l?.firstFrame.median, 2)} / ${fixed(l?.bareFirstFrame.median, 2)}`,
      `${fixed(l?.load.min, 1)} – ${fixed(l?.load.max, 1)}`,
      `${fixed(l?.bare.min, 1)} – ${fixed(l?.bare.max, 1)}`,
      thousands(l?.frames),
      fixed(l?.parse.median, 1),
    ];
  });
  const load = run.fixture?.load;
  return [
    `### \`session/load\` of a ${
      STORE_BENCH.loadEvents.toLocaleString("en-US")
    }-event session in a fresh process vs a fresh bare agent sending as many updates (ms, ` +
    `median of ${runs} interleaved rounds after ${settings.loadWarmups} warm-up round(s))`,
    "",
    table(
      [
        "runtime",
        "ours session/load",
        "bare sending them",
        "ratio (median of rounds)",
        "ratio p25 – p75 (min – max)",
        "target",
        "result",
        "first replayed frame ours / bare",
        "ours min – max",
        "bare min – max",
        "updates replayed",
        "read + parse in this process (no target)",
      ],
      loadRows,
    ),
    "",
    (load === undefined
      ? "The log could not be written (see Errors). "
      : `The log is ${(load.logBytes / 1024 ** 2).toFixed(1)} MiB, ` +
        `${thousands(load.logBytes / load.events)} bytes a record on average: ` +
        `${
          thousands(load.events / STORE_BENCH.turnEvents)
        } turns, each a prompt, four model steps (reasoning and ` +
        "text; three of them with two tool calls, their results and, in two, a permission " +
        "answer) and their usage, then the turn's end. ") +
    "Each round starts ours fresh (spawn, `initialize`, then `session/load` over stdio, timed " +
    "from the request to its response) and a fresh bare SDK agent (spawn, `initialize`, " +
    "`session/new`, then one `session/prompt` that it answers with a title and " +
    "`agent_message_chunk` notifications, as many in all as the load replays (`BARE_CHUNKS` one " +
    "fewer), timed the same " +
    "way), the order alternating round by round; both processes exit before the next side " +
    "starts. Before answering, ours reads and checks the log, rebuilds the conversation and " +
    `replays it: ${
      load === undefined ? "thousands of" : thousands(load.replayFrames)
    } \`session/update\` notifications (user messages, thoughts, messages, tool calls and ` +
    "their final updates, the title, the latest usage), each serialized and written to the " +
    "pipe, then read and `JSON.parse`d by this client; a round fails unless every one of " +
    "them (and every one of the bare agent's) arrives before the response. First replayed " +
    "frame: from the request to the first `session/update` of that session arriving here " +
    "(median), how soon a client starts drawing the conversation. The ratio is ours over bare " +
    "round by round; the target is judged on its interquartile range as in the start-up " +
    "section. Read + parse: the same log in this bench process (`Deno.readTextFile`, split " +
    "lines, `JSON.parse` each), once per round; its old target (≤ 2× of it) is dropped " +
    "(issue 35), and it stays only as information.",
  ].join("\n");
}

/** The in-process appends of the durable sessions (no target). */
function renderAppendsSection(run: Results): string {
  const { settings } = run;
  const { appends } = run;
  const appendRows = appends.results.map((a) => [
    APPEND_MODE_NAMES[a.mode],
    thousands(a.appends),
    thousands(a.perSecond),
    thousands(a.logSyncs),
    a.logSyncs === 0 ? "n/a" : fixed(a.appends / a.logSyncs, 1),
    fixed(a.logSyncMs, 2),
    thousands(a.indexSyncs),
  ]);
  const appendBytes = appends.results[0]?.bytesPerAppend;
  return [
    "### Appends per second: `JsonlSessionStore` in this process (Deno), one event per append " +
    "(no target)",
    "",
    table(
      [
        "mode",
        "appends",
        "appends/s",
        "log fdatasyncs",
        "appends per fdatasync",
        "mean fdatasync (ms)",
        "index flushes",
      ],
      appendRows,
    ),
    "",
    "Each mode appends to one session of a fresh store (after a warm-up) on the file system of " +
    "`.bench-tmp/`; each event is one `tool_result` of " +
    `${appendBytes === undefined ? "a few hundred" : thousands(appendBytes)} bytes as a log ` +
    "line. Every append is one `write` on the log's kept-open `O_APPEND` descriptor, done " +
    "before `append` returns. `sync: true` (a commit point: prompt admitted, step committed, " +
    "tool result, turn end) then resolves once the log is `fdatasync`ed; the store starts a " +
    `flush ${SYNC_DELAY_MS} ms after the first request so that the commit points of a burst ` +
    "share it (group commit). Awaited: each commit point waits for its flush before the next " +
    "append, so every append pays the window and an `fdatasync`. Burst: " +
    `${settings.appendBurst} commit points issued without waiting, then awaited together; they ` +
    "share one flush. The server itself never waits for a commit point (a session writes its " +
    "records at once and leaves their flush to the background; `session/close` waits for it), " +
    "so its commit points share flushes like this. No sync: `sync: false`, each " +
    "awaited; nothing is flushed. The index gets a line for the session at most once a second " +
    "(index flushes counts the `sync` ones), so these runs rarely touch it. The mean " +
    "fdatasync column is this machine's flush time. " +
    (appends.timerMs === undefined ? "" : `A \`setTimeout(${SYNC_DELAY_MS})\` takes ` +
      `${fixed(appends.timerMs, 2)} ms in this Deno process: an awaited append is that window ` +
      "plus the flush. ") +
    "On a disk whose flushes take milliseconds the awaited row falls in proportion, while " +
    "the burst row pays one flush per burst.",
  ].join("\n");
}

/** Peak RSS of the agent processes (no target). */
function renderRssSection(run: Results): string {
  const results = run.runtimes;
  const rssRows = results.map((r) => [
    r.runtime,
    fixed(r.startup?.rssMib.ours, 1),
    fixed(r.startup?.rssMib.bare, 1),
    ratioText(ratioOf(r.startup?.rssMib.ours, r.startup?.rssMib.bare)),
    fixed(r.throughput?.rssMib.ours, 1),
    fixed(r.throughput?.rssMib.bare, 1),
    ratioText(ratioOf(r.throughput?.rssMib.ours, r.throughput?.rssMib.bare)),
  ]);
  return [
    "## Peak RSS of the agent process (VmHWM, MiB, read just before stdin is closed; no target)",
    "",
    table(
      [
        "runtime",
        "idle ours",
        "idle bare",
        "ratio",
        "after stream ours",
        "after stream bare",
        "ratio",
      ],
      rssRows,
    ),
    "",
    "Idle: after `initialize` and `session/new` (median of the start-up runs). After stream: the " +
    "throughput process, after all its prompts.",
  ].join("\n");
}

/** How noisy the figures are, and how the sides share the noise. */
function renderNoiseSection(run: Results): string {
  const { machine } = run;

  return [
    "## Noise",
    "",
    `The machine has ${machine.nproc} cores shared by the client (this Deno process) and the agent, ` +
    "so figures move by up to ±40% between runs; " +
    "compare ours with bare within one run only. Ours and bare are interleaved run by run (start-up), " +
    "block by block (round trip, with ours on `memory:` as a third; `session/new` in a row), " +
    "prompt by prompt (throughput) and turn by turn (LLM turn, time to first update with its " +
    "floor) so they share the same noise; likewise the CPU turns round by round, the two " +
    "`session/list` servers call by call, " +
    "`session/load` with its read + parse baseline, and the HTTP section's SSE, WebSocket and " +
    "stdio prompt by prompt. " +
    (machine.clientCeiling === undefined
      ? "The client's own ceiling could not be measured (no `cat`)."
      : `This client alone takes in about ${thousands(machine.clientCeiling)} notifications/s ` +
        "(`cat` of a ready-made NDJSON file), the ceiling of the throughput figures above that " +
        "it measured; the HTTP section's lean clients do not parse `agent_message_chunk` " +
        "updates, so their figures can go higher."),
  ].join("\n");
}

/** The start-up comparison of builds: its table and what it shows. */
function renderBuildSection({ settings, builds, compiled }: Results): string {
  const heading = "## Start-up by build: spawn → `initialize` response (ms, median of " +
    `${settings.startupRuns} after a warm-up; no target)`;
  if (typeof builds === "string") return [heading, "", `Not measured: ${builds}`].join("\n");
  const rows = builds.map((build) => {
    const bare = builds.find((other) => other.kind === "bare" && other.key === build.key);
    return [
      build.label,
      fixed(build.initializeMs, 1),
      build.kind === "ours" ? ratioText(ratioOf(build.initializeMs, bare?.initializeMs)) : "",
      `${fixed(build.minMs, 1)} – ${fixed(build.maxMs, 1)}`,
      fixed(build.sessionNewMs, 1),
      fixed(build.exitMs, 1),
      fixed(build.rssMib, 1),
      mib(build.bytes),
    ];
  });
  const ours = builds.filter((build) => build.kind === "ours");
  const fastest = [...ours].sort((a, b) => a.initializeMs - b.initializeMs)[0];
  const binary = ours.find((build) => build.key === "binary");
  const buildSeconds = typeof compiled === "string" ? undefined : compiled.ours.ms / 1000;
  return [
    heading,
    "",
    table(
      [
        "build",
        "initialize",
        "ratio to bare",
        "min – max",
        "session/new",
        "exit after EOF",
        "idle RSS (MiB)",
        "size",
      ],
      rows,
    ),
    "",
    "Every way of running ours, and the bare agent run the same ways, in one rotation: each run " +
    "starts every build once (the order shifting by one each run), so they share the machine's " +
    "noise; the per-runtime table above measures ours and bare of one runtime at a time. The " +
    "compiled binaries are built by `scripts/compile.ts` (`bun build --compile --minify " +
    "--bytecode`: the Bun runtime and the bundled program in one file that needs no " +
    "`node_modules`) into `.bench-tmp/bin/` before the run" +
    (buildSeconds === undefined ? "" : `, ours in ${buildSeconds.toFixed(1)} s`) +
    "; the bare one is `bench/bare_agent.ts` compiled the same way. The bundles on Deno and Bun " +
    "are `dist/cli.js` (ours: it runs each runtime's own entry) and the bare agent's Node.js " +
    "bundle, run with `deno run -A` and `bun`. Ratio to bare: ours over " +
    "the bare agent run the same way. Session/new: spawn → `session/new` response; exit after " +
    "EOF: stdin closed → process exit; idle RSS: VmHWM after `session/new`. The size is the " +
    "executable's (Node.js, Deno and Bun themselves are not counted for the other rows). " +
    (fastest === undefined
      ? ""
      : `Fastest of ours to \`initialize\`: ${fastest.label}, ${
        fixed(fastest.initializeMs, 1)
      } ms` +
        (binary === undefined || binary === fastest
          ? "."
          : `; the compiled binary ${fixed(binary.initializeMs, 1)} ms.`)),
  ].join("\n");
}

/** What start-up loads, by module group (no target). */
function renderProfilesSection({ profiles }: Results): string {
  return [
    "## What start-up loads, by module group (no target)",
    "",
    typeof profiles === "string"
      ? `Not measured: ${profiles}`
      : "Every module `initialize` waits for, grouped (our source directories, each npm package, " +
        "the `node:` built-ins), with its size and load cost: measured on Deno and Bun (the " +
        "modules imported in dependency order in one process, median of processes), estimated " +
        "on Node.js from each group's bytes in the start-up bundle times its measured load " +
        "time (`bench/startup_profile.ts`). What is not needed for `initialize` is loaded on " +
        "first use: the session side after the `initialize` answer, the file system and the " +
        "process supervisor on first use, MCP, HTTP and PostgreSQL with their first use.\n\n" +
        renderStartupProfiles(profiles),
  ].join("\n");
}

/** The durable-session sections. */
function renderDurableSections(run: Results, tally: Tally): string {
  return [
    "## Durable sessions",
    "",
    "Ours over stdio, started with `--data-dir` on data directories that `bench/store_bench.ts` " +
    "writes directly in the store's format (one JSONL log per session and a compact " +
    "`index.jsonl`, one line per session, as a rewrite leaves it) and checks first with " +
    "`JsonlSessionStore` in this process (the first page and a sample load must match what was " +
    "written, and any store warning, such as a rebuilt index, fails the run). The data lives " +
    "under `.bench-tmp/store/` for the run and is removed at the end.",
    "",
    renderSessionListSection(run, tally),
    "",
    renderSessionLoadSection(run, tally),
    "",
    renderSessionForkSection(run),
    "",
    renderAppendsSection(run),
  ].join("\n");
}

/** The compaction of a long session (no target). */
function renderCompactionSection(run: Results): string {
  const results = run.runtimes;
  const rows = results.map(({ runtime, compaction: c }) => [
    runtime,
    thousands(c?.turns),
    fixed(c?.compactMs, 1),
    fixed(c?.promptMs, 2),
    c === undefined ? "–" : `${thousands(c.messagesBefore)} → ${thousands(c.messagesAfter)}`,
    c === undefined ? "–" : `${thousands(c.tokensBefore)} → ${thousands(c.tokensAfter)}`,
    c === undefined ? "–" : `${fixed(c.logBytes / 1_048_576, 1)} MiB`,
  ]);
  return [
    "## Compaction of a long session (no target)",
    "",
    table(
      [
        "runtime",
        "turns",
        "`/compact` ms",
        "prompt ms (same history)",
        "messages before → after",
        "est. tokens before → after",
        "log size",
      ],
      rows,
    ),
    "",
    "A scripted session of that many turns (each reads a 4 KB file, then answers), then " +
    "`/compact` from a client that takes compaction updates. The summary is scripted, so the " +
    "`/compact` time is the server's own work (the transcript of the older history, the token " +
    "estimates, the record, the updates) besides one model round trip; the prompt column is the " +
    "median of ordinary prompts just after, for scale. The model's window is 2,000 tokens a " +
    "turn (the session just fits, so it does not compact by itself); the recent steps that fit " +
    "a fifth of it stay verbatim.",
  ].join("\n");
}

/** The report's head: the run, the machine, what is compared, and the targets' count. */
function renderHead({ settings, machine }: Results, tally: Tally): string {
  const verdicts = tally;
  return [
    "# acp-harness benchmark: ours vs a bare SDK 2.4 echo agent",
    "",
    `Generated by \`deno run -A bench/main.ts${
      settings.quick ? " --quick" : ""
    }\` on ${machine.date}.` +
    (settings.quick ? " **Quick run: reduced iterations, smoke test only.**" : ""),
    "",
    `Machine: ${machine.nproc} cores (${machine.cpu}), ${machine.memoryGib.toFixed(0)} GiB, ` +
    `Linux ${machine.kernel}; node ${machine.node}, ${machine.deno}, bun ${machine.bun}. ` +
    `Load average (1 min) at the start and the end of the run: ${fixed(machine.load[0], 2)}, ` +
    `${fixed(machine.load[1], 2)} (other work on the machine moves every figure).`,
    "",
    "Ours is `deno run -A mod.ts`, `node dist/cli.js` (minified esbuild bundle) and `bun mod.ts`; " +
    "the bare agent is `bench/bare_agent.ts` run the same ways (bundled the same way for Node). " +
    "Ratios are ours / bare.",
    "",
    `Result: ${verdicts.passed} targets met, ${verdicts.failed} missed.`,
    ...(verdicts.withinNoise === 0 ? [] : [
      "",
      `Of the targets met, ${verdicts.withinNoise} are met within noise: judged on the spread ` +
      "of per-round ratios, that spread straddles the target.",
    ]),
  ].join("\n");
}

/** The sections whose rendering lives with their phase modules. */
function renderPhaseSections(run: Results, tally: Tally): {
  readonly breakdown: string;
  readonly mcp: string;
  readonly delegation: string;
  readonly http: string;
} {
  const results = run.runtimes;
  const breakdown = renderBreakdownSections(
    results.map((r) => ({
      runtime: r.runtime,
      firstUpdate: r.firstUpdate,
      cpu: r.turnCpu,
      failed: phaseFailed(r, "LLM breakdown"),
    })),
    breakdownCounts(run.settings.quick),
    tally,
  );
  const mcp = renderMcpSection(
    results.map((r) => ({
      runtime: r.runtime,
      mcp: r.mcp,
      startup: r.startup?.initializeMs,
      failed: phaseFailed(r, "MCP"),
    })),
    run.mcpGraph,
    tally,
  );
  const delegation = renderDelegationSection(results.map((r) => ({
    runtime: r.runtime,
    delegation: r.delegation,
    failed: phaseFailed(r, "delegation"),
  })));
  const http = renderHttpSection({
    rows: results.map((r) => ({
      runtime: r.runtime,
      http: r.http,
      startup: r.startup?.initializeMs,
      failed: phaseFailed(r, "HTTP"),
    })),
    graph: run.httpGraph,
    counts: httpBenchCounts(run.settings.quick, run.settings.chunks),
    tally,
  });
  return { breakdown, mcp, delegation, http };
}

/**
 * Renders `bench/RESULTS.md` (before `deno fmt`) from a run's results.
 *
 * @example
 * ```ts ignore
 * await Deno.writeTextFile(RESULTS_FILE, renderReport(results));
 * ```
 */
export function renderReport(run: Results): string {
  const tally = new Tally();
  const phases = renderPhaseSections(run, tally);
  const sections = [
    renderStartupSection(run, tally),
    renderSessionNewSections(run, tally),
    renderBuildSection(run),
    renderProfilesSection(run),
    renderRoundTripSection(run, tally),
    renderThroughputSection(run, tally),
    renderLlmTurnSection(run),
    phases.breakdown,
    renderDurableSections(run, tally),
    phases.mcp,
    phases.delegation,
    phases.http,
    renderCompactionSection(run),
    renderWorktreeSection(run),
    renderScaleSection(run.scale),
    renderRssSection(run),
    renderNoiseSection(run),
  ];
  const { warnings, appends } = run;
  const errors = [
    ...run.runtimes.flatMap((r) => r.errors.map((e) => `- ${r.runtime}: ${e}`)),
    ...appends.errors.map((e) => `- in-process: ${e}`),
  ];
  return [
    renderHead(run, tally),
    ...sections.flatMap((section) => ["", section]),
    ...(warnings.length > 0 ? ["", "## Warnings", "", ...warnings.map((w) => `- ${w}`)] : []),
    ...(errors.length > 0 ? ["", "## Errors", "", ...errors] : []),
    "",
  ].join("\n");
}
