/**
 * Hostile MCP servers (tests/_fixtures/hostile_mcp_server.mjs, one `--mode` per case): garbage on
 * stdout, a 70 MiB line, 5,000 tools, endless pages, schema bombs and malformed tool schemas
 * (those tools left out, the others working), a ReDoS output schema, 50 MiB
 * and 10,000-block results, unknown content, a call never answered, a server that ignores EOF and
 * SIGTERM (with a child that does too), one whose child left its group and session (setsid), one
 * that exits mid-call, one with no tools capability, notification floods, a `list_changed` loop,
 * server-to-client requests, bad `initialize` answers and none at all, and an HTTP server URL
 * carrying the case's secret as password and `?token=` on a closed port. For
 * each: the agent keeps serving, the prompt ends (or `session/new` fails with -32603 naming the
 * server), every frame is JSON-RPC and matches the ACP schema, nothing carrying the case's marker
 * is left once the session or the agent ended (stdin EOF, SIGTERM, `session/close`,
 * `session/delete`), and neither the server's declared secret nor the agent's own secrets leak.
 *
 * @module
 */
import { accessSync, constants } from "node:fs";
import { mkdir, readdir, readFile } from "node:fs/promises";
import { type AddressInfo, createServer } from "node:net";
import { delimiter, isAbsolute, join } from "node:path";
import process from "node:process";
import { schemaProblems } from "../../tests/_helpers/acp_schema.ts";
import type { Scenario, ScenarioContext } from "../context.ts";
import { hunt, killAll } from "../../tests/_helpers/marked_processes.ts";
import { type Frame, random, ROOT, type Server, writeScript } from "../driver.ts";

/** The hostile server. */
const FIXTURE = `${ROOT}tests/_fixtures/hostile_mcp_server.mjs`;

/** The server's name in every declaration. */
const SERVER_NAME = "hostile";

/** How a case ends. */
const ENDINGS = ["session/close", "session/delete", "stdin-eof", "SIGTERM"] as const;
type Ending = typeof ENDINGS[number];

/** What the tool calls must end as. */
type Outcome = "completed" | "failed" | "any";

interface Mode {
  readonly name: string;
  /** The tools the script calls, in one step. */
  readonly calls?: readonly string[];
  /**
   * Tools the server lists with a malformed definition: the script calls them too (after
   * `calls`); each must be unknown to the model (the call fails `Unknown tool`) and named by a
   * `MCP server tool left out` warning, while the server starts.
   */
  readonly absent?: readonly string[];
  /**
   * Instead of the hostile stdio server, an HTTP server whose URL carries the case's secret as
   * its password and `?token=` (`http://u:SECRET@127.0.0.1:PORT/mcp?token=SECRET`) on a loopback
   * port nothing listens on: the start fails, and the secret must not leak.
   */
  readonly remote?: boolean;
  /**
   * `session/new` must fail (`must`) or may fail (`may`) with -32603 naming the server and a
   * message matching `cause` (for `may`: any cause but one the agent made up by closing it).
   */
  readonly start?: { readonly fails: "must" | "may"; readonly cause?: RegExp };
  /** `--mcp-start-timeout` (s). */
  readonly startTimeout?: number;
  /** Cancel the turn once the call runs: it must end `cancelled`. */
  readonly cancel?: boolean;
  readonly outcome?: Outcome;
  /** A failure detail found in the turn's updates (as JSON), or undefined. */
  readonly check?: (updates: string) => string | undefined;
  /** Run at the `test` size too. */
  readonly test?: boolean;
  /** Ended each of these ways (a case each), instead of one way picked at random. */
  readonly endings?: readonly Ending[];
}

const MODES: readonly Mode[] = [
  { name: "polite", calls: ["poke"], outcome: "completed" },
  { name: "garbage", calls: ["poke"], outcome: "completed", test: true },
  { name: "long-line", calls: ["poke"], outcome: "failed" },
  { name: "many-tools", calls: ["poke"], outcome: "completed" },
  // The MCP client stops after 64 pages: refusing the server is fine, for the right reason.
  { name: "endless-pages", calls: ["poke"], outcome: "completed", start: { fails: "may" } },
  // A 10,000-deep input or output schema leaves that tool out (the client library's validation
  // of it would overflow the stack and refuse the whole list); `poke` works.
  { name: "schema-deep", calls: ["poke"], absent: ["deep_in", "deep_out"], outcome: "completed" },
  {
    name: "bad-tools",
    calls: ["poke", "poke_too"],
    absent: ["deep_in", "string_in", "number_in"],
    outcome: "completed",
    test: true,
  },
  { name: "schema-refs", calls: ["poke", "cycle", "fan_out"], outcome: "any" },
  { name: "redos-output", calls: ["poke"], outcome: "any", test: true },
  { name: "huge-result", calls: ["poke"], outcome: "completed" },
  { name: "many-blocks", calls: ["poke"], outcome: "completed" },
  { name: "unknown-blocks", calls: ["poke"], outcome: "any" },
  { name: "never-answers", calls: ["poke"], cancel: true, test: true },
  // Nothing to call; the MCP client's own console output about it stays off the agent's stdout.
  { name: "no-tools", test: true },
  { name: "immortal", calls: ["poke"], outcome: "completed", test: true },
  // A child in a session of its own (setsid), deaf to SIGTERM: it ends with its server.
  {
    name: "setsid-child",
    calls: ["poke"],
    outcome: "completed",
    test: true,
    endings: ["session/close", "session/delete"],
  },
  { name: "exit-mid-call", calls: ["poke", "poke"], outcome: "failed", test: true },
  { name: "flood", calls: ["poke"], outcome: "completed" },
  { name: "list-changed-loop", calls: ["poke"], outcome: "completed", test: true },
  {
    name: "server-requests",
    calls: ["poke"],
    outcome: "completed",
    test: true,
    check: (updates) => {
      // The one answer a server's question may get from a client that takes none: a decline.
      const rest = updates.replaceAll(
        'ACCEPTED elicitation/create: {\\"action\\":\\"decline\\"}',
        "declined elicitation/create",
      );
      const found = /(UNANSWERED|ACCEPTED) [a-z/A-Z]+/.exec(rest);
      return found ? `the agent answered a server request so: ${found[0]}` : undefined;
    },
  },
  { name: "bad-version", start: { fails: "must", cause: /protocol version|1999-01-01/i } },
  { name: "init-error", start: { fails: "must", cause: /refuses to start/ }, test: true },
  { name: "no-init", start: { fails: "must", cause: /within 1 s/ }, startTimeout: 1 },
  { name: "url-secrets", remote: true, start: { fails: "must" }, test: true },
];

/** A start failure the agent made up: the server exited only because the agent closed it. */
const MADE_UP_CAUSE = /did not start: exited with code 0$/;

/** The agent's own inbound limit (`--max-message-bytes`): a client may refuse bigger frames. */
const MAX_FRAME_CHARS = 32 * 1024 * 1024;

/** The agent's own secrets (in its environment): no MCP server may see them. */
const AGENT_SECRET_NAMES = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ACP_HARNESS_TORTURE_TOKEN"];

/** The server's process supervisor (src/host/process_guard.ts), by its command line. */
const SUPERVISOR = /acp-harness-supervisor/;

/** docs/mcp.md's promise: stdin closed, 2 s grace, then the group is killed; plus a margin. */
const GONE_WITHIN_MS = 3_000;

/** A `session/list` asked while a call runs must be answered within this. */
const PROBE_MS = 2_000;

/** Finds `name` on PATH; returns its absolute path. */
function onPath(name: string): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    try {
      accessSync(join(dir, name), constants.X_OK);
      return join(dir, name);
    } catch {
      // Not here.
    }
  }
  throw new Error(`Cannot find ${name} on PATH`);
}

/** See the module doc. */
export const mcp: Scenario = {
  name: "mcp",
  description: `${MODES.length} hostile MCP servers × 4 endings: agent serves, no leftovers`,
  // Its heavy cases (50 MiB, floods, 1 MiB garbage lines) on three runtimes at once missed the
  // 8 s and 2 s limits on two cores now and then, in CI and locally, with no server at fault.
  alone: true,
  async run(context: ScenarioContext): Promise<void> {
    const node = onPath("node");
    const rounds = context.pick(2, 1, 1);
    const next = random(context.seed + 9);
    const cases: Array<{ mode: Mode; ending: Ending }> = [];
    const modes = context.size === "test" ? MODES.filter((mode) => mode.test) : MODES;
    const callTimeout = context.pick(5, 5, 3);
    for (let round = 0; round < rounds; round++) {
      for (const mode of modes) {
        // Drawn for every mode, so that the other modes' endings stay those of the seed.
        const drawn = ENDINGS[Math.floor(next() * ENDINGS.length)] as Ending;
        for (const ending of mode.endings ?? [drawn]) cases.push({ mode, ending });
      }
    }
    // A few at once: most wait on a grace period or a timeout.
    const parallel = context.pick(4, 4, 8);
    for (let start = 0; start < cases.length; start += parallel) {
      await Promise.all(
        cases.slice(start, start + parallel).map(({ mode, ending }, offset) =>
          oneCase(context, { node, mode, ending, index: start + offset, callTimeout })
        ),
      );
    }
  },
};

/** A server's requests by id, so that their answers can be checked against the schema. */
class Tracked {
  readonly methods = new Map<number, string>();
  readonly server: Server;

  constructor(server: Server) {
    this.server = server;
  }

  /** Sends a request alone; resolves with its response (undefined on timeout or exit). */
  async call(method: string, params: unknown, ms = 30_000): Promise<Frame | undefined> {
    const { id, frame } = this.server.request(method, params);
    this.methods.set(id, method);
    await this.server.write(frame);
    return await this.server.response(id, ms);
  }

  /** A prompt request, sent; its id. */
  async prompt(sessionId: string, text: string): Promise<number> {
    const { id, frame } = this.server.promptRequest(sessionId, text);
    this.methods.set(id, "session/prompt");
    await this.server.write(frame);
    return id;
  }
}

interface CaseOptions {
  readonly node: string;
  readonly mode: Mode;
  readonly ending: Ending;
  readonly index: number;
  /** `--mcp-call-timeout` (s); a turn not over 3 s later hangs. */
  readonly callTimeout: number;
}

async function oneCase(context: ScenarioContext, options: CaseOptions): Promise<void> {
  const { node, mode, ending, index, callTimeout } = options;
  const label = `${mode.name} / ${ending}`;
  const dir = join(context.base, `case-${index}`);
  const cwd = join(dir, "ws");
  const dataDir = join(dir, "data");
  await mkdir(cwd, { recursive: true });
  const calls = [
    ...(mode.calls ?? []).map((name, call) => ({ id: `call-${call}`, name })),
    ...(mode.absent ?? []).map((name, call) => ({ id: `absent-${call}`, name })),
  ].map(({ id, name }) => ({ id, name: `mcp__${SERVER_NAME}__${name}`, arguments: { text: "x" } }));
  const script = await writeScript(dir, "script.json", [
    ...(calls.length > 0 ? [{ toolCalls: calls }] : []),
    { text: "done" },
  ]);
  const marker = context.newMarker();
  const secret = `hostile-secret-${crypto.randomUUID()}`;
  const agentSecret = `sk-torture-agentsecret-${crypto.randomUUID()}`;
  const agent = context.start({
    dataDir,
    cwd: dir,
    marker,
    args: [
      "--mode",
      "auto",
      "--model",
      "scripted",
      "--script",
      script,
      "--mcp-start-timeout",
      String(mode.startTimeout ?? 15),
      "--mcp-call-timeout",
      String(callTimeout),
      "--log-level",
      "debug",
      // A server that does not start must fail session/new here, as the scenario counts it.
      "--mcp-strict",
    ],
    env: Object.fromEntries(AGENT_SECRET_NAMES.map((name) => [name, agentSecret])),
  });
  const tracked = new Tracked(agent);
  context.run();
  try {
    await body(context, {
      tracked,
      mode,
      ending,
      label,
      cwd,
      node,
      marker,
      secret,
      hangMs: callTimeout * 1000 + 3_000,
      endingMs: context.pick(10_000, 10_000, 5_000),
    });
  } finally {
    if (!agent.exit) {
      const exited = await agent.stop(10_000);
      if (!exited) context.fail("other", "slow-exit", `${label}: no exit within 10 s of EOF`);
    }
    context.checkCrash(agent, label);
    checkFrames(context, tracked, label);
    await checkSecrets(context, { agent, label, secret, agentSecret, dataDir });
  }
}

interface BodyOptions {
  readonly tracked: Tracked;
  readonly mode: Mode;
  readonly ending: Ending;
  readonly label: string;
  readonly cwd: string;
  readonly node: string;
  readonly marker: string;
  readonly secret: string;
  /** A turn not over within this hangs. */
  readonly hangMs: number;
  /** How long `session/close` or `session/delete` may take. */
  readonly endingMs: number;
}

async function body(context: ScenarioContext, options: BodyOptions): Promise<void> {
  const { tracked, mode, label, cwd, node, marker, secret } = options;
  const agent = tracked.server;
  const init = await tracked.call("initialize", {
    protocolVersion: 1,
    clientCapabilities: {},
    clientInfo: { name: "acp-harness-torture", version: "0" },
  });
  if (init === undefined || "error" in init) {
    context.fail("other", "exception", `${label}: initialize: ${JSON.stringify(init)}`);
    return;
  }
  const declaration = mode.remote
    ? {
      type: "http",
      name: SERVER_NAME,
      url: `http://u:${secret}@127.0.0.1:${await closedPort()}/mcp?token=${secret}`,
      headers: [],
    }
    : {
      name: SERVER_NAME,
      command: node,
      args: [FIXTURE, `--mode=${mode.name}`, `--marker=${marker}`],
      env: [{ name: "HOSTILE_SECRET", value: secret }],
    };
  const opened = await tracked.call("session/new", { cwd, mcpServers: [declaration] }, 30_000);
  let sessionId: string | undefined;
  if (opened === undefined) {
    context.fail("other", "hang", `${label}: session/new not answered within 30 s`);
  } else if ("error" in opened) {
    const error = opened.error as { code?: number; message?: string };
    const message = String(error.message);
    if (mode.start === undefined) {
      context.fail("other", "start-failed", `${label}: ${JSON.stringify(error)}`);
    } else if (error.code !== -32603 || !message.includes(`"${SERVER_NAME}"`)) {
      context.fail("other", "wrong-code", `${label}: ${JSON.stringify(error)}`);
    } else if (
      mode.start.cause ? !mode.start.cause.test(message) : MADE_UP_CAUSE.test(message)
    ) {
      context.fail("other", "wrong-cause", `${label}: ${message}`);
    }
  } else {
    sessionId = (opened.result as { sessionId: string }).sessionId;
    if (mode.start?.fails === "must") {
      context.fail("other", "started", `${label}: session/new succeeded`);
    } else await turn(context, tracked, mode, sessionId, options.hangMs);
  }
  // The agent keeps serving: an unknown method, a listing, a session without MCP servers.
  if (!(await context.checkAnswers(agent, label))) return;
  const listed = await tracked.call("session/list", {}, 10_000);
  const plain = await tracked.call("session/new", { cwd, mcpServers: [] }, 10_000);
  if (listed === undefined || "error" in listed || plain === undefined || "error" in plain) {
    context.fail(
      "other",
      "not-serving",
      `${label}: session/list ${JSON.stringify(listed?.error ?? listed)}, session/new ${
        JSON.stringify(plain?.error ?? plain)
      }`,
    );
  }
  const target = sessionId ?? (plain?.result as { sessionId?: string } | undefined)?.sessionId;
  await end(context, tracked, options, target);
}

/** Runs the prompt and checks how it ends. */
async function turn(
  context: ScenarioContext,
  tracked: Tracked,
  mode: Mode,
  sessionId: string,
  hangMs: number,
): Promise<void> {
  const agent = tracked.server;
  const label = mode.name;
  const from = agent.frames.length;
  const promptId = await tracked.prompt(sessionId, `hostile ${mode.name}`);
  const running = await agent.waitFor(
    () =>
      agent.responseIndex(promptId) !== -1 ||
      agent.updates(sessionId, from).some((update) => update.status === "in_progress"),
    15_000,
  );
  if (running && agent.responseIndex(promptId) === -1) {
    // While a call runs, the agent answers other requests.
    const started = performance.now();
    const probe = await tracked.call("session/list", {}, 30_000);
    const waited = performance.now() - started;
    if (probe === undefined || waited > PROBE_MS) {
      context.fail(
        "other",
        "blocked",
        `${label}: session/list during the call waited ${Math.round(waited)} ms`,
      );
    }
  }
  if (mode.cancel) {
    await agent.write(agent.notification("session/cancel", { sessionId }));
  }
  let response = await agent.response(promptId, mode.cancel ? 5_000 : hangMs);
  if (response === undefined && !mode.cancel) {
    context.fail("other", "hang", `${label}: the turn did not end within ${hangMs / 1000} s`);
    await agent.write(agent.notification("session/cancel", { sessionId }));
    response = await agent.response(promptId, 5_000);
  }
  if (response === undefined) {
    if (await agent.answers(10_000)) {
      context.fail("other", "cancel-ignored", `${label}: a cancel did not end the turn in 5 s`);
    }
    return;
  }
  const stopReason = (response.result as { stopReason?: string } | undefined)?.stopReason;
  const wanted = mode.cancel ? "cancelled" : "end_turn";
  if (stopReason !== wanted) {
    context.fail(
      "other",
      mode.cancel ? "cancel-ignored" : "wrong-answer",
      `${label}: the prompt answered ${JSON.stringify(response.result ?? response.error)}`,
    );
  }
  const updates = agent.updates(sessionId, from);
  const ids = updates.filter((update) => update.sessionUpdate === "tool_call")
    .map((update) => String(update.toolCallId));
  await checkAbsent(context, agent, mode, updates);
  for (const id of ids.filter((id) => !id.startsWith("absent-"))) {
    const status = updates.filter((update) => update.toolCallId === id && update.status)
      .at(-1)?.status;
    const expected = mode.outcome ?? "any";
    if (mode.cancel) continue;
    if (status !== "completed" && status !== "failed") {
      context.fail("other", "unfinished-call", `${label}: tool call ${id} ended ${status}`);
    } else if (expected !== "any" && status !== expected) {
      const content = JSON.stringify(
        updates.filter((update) => update.toolCallId === id).at(-1)?.content ?? "",
      ).slice(0, 300);
      context.fail("other", "wrong-outcome", `${label}: ${id} ${status}: ${content}`);
    }
  }
  if (!mode.cancel && ids.length < (mode.calls?.length ?? 0) + (mode.absent?.length ?? 0)) {
    context.fail("other", "missing-call", `${label}: ${ids.length} tool calls shown`);
  }
  const problem = mode.check?.(JSON.stringify(updates));
  if (problem !== undefined) context.fail("other", "server-request", problem);
}

/**
 * The tools a mode lists malformed were not offered to the model (their calls failed as unknown)
 * and a warning names each.
 */
async function checkAbsent(
  context: ScenarioContext,
  agent: Server,
  mode: Mode,
  updates: ReadonlyArray<Record<string, unknown>>,
): Promise<void> {
  for (const [index, name] of (mode.absent ?? []).entries()) {
    const last = updates.filter((update) => update.toolCallId === `absent-${index}`).at(-1);
    if (last?.status !== "failed" || !JSON.stringify(last.content).includes("Unknown tool")) {
      context.fail(
        "other",
        "bad-tool-offered",
        `${mode.name}: ${name} ${JSON.stringify(last ?? "not shown").slice(0, 300)}`,
      );
    }
    const warning = new RegExp(`warn: MCP server tool left out[^\n]*"tool":"${name}"`);
    if (!(await agent.waitFor(() => warning.test(agent.stderr), 5_000))) {
      context.fail("other", "bad-tool-unnamed", `${mode.name}: no warning names ${name}`);
    }
  }
}

/** A loopback port nothing listens on (it was free a moment ago). */
function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** Ends the session or the agent, then hunts for whatever carries the marker. */
async function end(
  context: ScenarioContext,
  tracked: Tracked,
  options: BodyOptions,
  sessionId: string | undefined,
): Promise<void> {
  const { ending, label, marker } = options;
  const agent = tracked.server;
  let alive = false;
  switch (ending) {
    case "stdin-eof":
      agent.end();
      break;
    case "SIGTERM":
      agent.kill("SIGTERM");
      break;
    case "session/close":
    case "session/delete": {
      alive = true;
      const answer = await tracked.call(ending, { sessionId }, options.endingMs);
      if (answer === undefined || "error" in answer) {
        context.fail("other", "ending-failed", `${label}: ${JSON.stringify(answer?.error)}`);
      }
      break;
    }
  }
  if (!alive && !(await agent.exitWithin(10_000))) {
    context.fail("other", "slow-exit", `${label}: the agent did not exit within 10 s`);
    agent.kill("SIGKILL");
    await agent.exited;
  }
  // While the agent lives, it and its process supervisor are not leftovers.
  const left = await hunt(
    marker,
    GONE_WITHIN_MS,
    alive ? [agent.pid] : [],
    alive ? SUPERVISOR : undefined,
  );
  if (left.length > 0) {
    context.fail(
      "leftovers",
      label,
      `${label}: ${left.map(({ pid, command }) => `${pid} ${command.slice(0, 160)}`).join("; ")}`,
      left.length,
    );
    killAll(left);
  }
  if (alive && !(await context.checkAnswers(agent, `${label} (after the ending)`))) return;
}

/** Every frame is JSON-RPC 2.0 and matches the ACP schema. */
function checkFrames(context: ScenarioContext, tracked: Tracked, label: string): void {
  const problems: string[] = [];
  for (const frame of tracked.server.frames) {
    const basic = rpcProblem(frame);
    if (basic !== undefined) {
      problems.push(`${basic}: ${JSON.stringify(frame).slice(0, 200)}`);
      continue;
    }
    const method = typeof frame.id === "number" ? tracked.methods.get(frame.id) : undefined;
    // Answers to the suite's unknown methods (`torture/ping`) are errors, checked as such.
    if ("result" in frame && method === undefined) continue;
    for (const problem of schemaProblems(frame, method)) {
      problems.push(`${problem} in ${JSON.stringify(frame).slice(0, 200)}`);
    }
  }
  if (problems.length > 0) {
    context.fail("other", "invalid-frame", `${label}: ${problems[0]}`, problems.length);
  }
  const biggest = tracked.server.lines.reduce((most, line) => Math.max(most, line.length), 0);
  if (biggest > MAX_FRAME_CHARS) {
    context.fail("other", "oversized-frame", `${label}: a frame of ${biggest} characters`);
  }
}

/** Why a frame is not a JSON-RPC 2.0 message, or undefined. */
function rpcProblem(frame: Frame): string | undefined {
  if (frame.jsonrpc !== "2.0") return "jsonrpc is not 2.0";
  const validId = (id: unknown): boolean =>
    typeof id === "string" || (typeof id === "number" && Number.isFinite(id));
  if ("method" in frame) {
    if (typeof frame.method !== "string") return "method is not a string";
    if ("id" in frame && !validId(frame.id)) return "request id is not a string or number";
    if ("result" in frame || "error" in frame) return "a request with result or error";
    return undefined;
  }
  if (!("id" in frame)) return "neither a request, a notification nor a response";
  if (("result" in frame) === ("error" in frame)) return "a response needs result xor error";
  if ("error" in frame) {
    const error = frame.error as { code?: unknown; message?: unknown } | null;
    if (typeof error?.code !== "number" || typeof error.message !== "string") {
      return "error without a numeric code and a message";
    }
  }
  return undefined;
}

interface SecretOptions {
  readonly agent: Server;
  readonly label: string;
  readonly secret: string;
  readonly agentSecret: string;
  readonly dataDir: string;
}

/**
 * The declared env value never reaches the agent's stderr, the client or the data directory;
 * the agent's own secrets never reach the server (it names what it found as `STOLEN <name>`).
 */
async function checkSecrets(context: ScenarioContext, options: SecretOptions): Promise<void> {
  const { agent, label, secret, agentSecret, dataDir } = options;
  if (agent.stderr.includes(secret)) {
    context.fail("escapes", "secret-on-stderr", `${label}: ${around(agent.stderr, secret)}`);
  }
  const line = agent.lines.find((text) => text.includes(secret) || text.includes(agentSecret));
  if (line !== undefined) {
    context.fail("escapes", "secret-to-client", `${label}: ${around(line, secret)}`);
  }
  const stolen = agent.lines.find((text) => text.includes("STOLEN "));
  if (stolen !== undefined) {
    context.fail("escapes", "env-to-server", `${label}: ${around(stolen, "STOLEN ")}`);
  }
  for (const file of await files(dataDir)) {
    const text = await readFile(file, "latin1").catch(() => "");
    if (text.includes(secret)) {
      context.fail("escapes", "secret-in-data", `${label}: ${file}: ${around(text, secret)}`);
    }
  }
}

function around(text: string, needle: string): string {
  const at = Math.max(0, text.indexOf(needle));
  return text.slice(Math.max(0, at - 150), at + 100);
}

/** Every file below `dir`. */
async function files(dir: string): Promise<string[]> {
  const found: string[] = [];
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) found.push(...await files(path));
    else if (entry.isFile()) found.push(path);
  }
  return found;
}
