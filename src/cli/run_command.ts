/**
 * `acp-harness run`: one prompt through the agent server, driven by an ACP client in this
 * process on a memory transport, printed, then the exit code of how the turn ended.
 *
 * @module
 */
import {
  client,
  type ContentBlock,
  type McpServer,
  methods,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
  type SessionNotification,
} from "../transport/acp_client.ts";
import type { AgentServer } from "../server/agent_server.ts";
import { createMemoryPair } from "../transport/memory.ts";
import type { RunOptions } from "../config/run_args.ts";
import { META_KEY } from "../util/meta_key.ts";
import { VERSION } from "../util/version.ts";

/** Exit codes of `acp-harness run` (documented in the README's "CI and scripts"). */
export const RUN_EXIT = {
  /** The turn ended with `end_turn`. */
  ok: 0,
  /** The turn failed (a provider error, a model not reachable). */
  failed: 1,
  /** Bad usage or config. */
  usage: 2,
  /** The model refused (`refusal`). */
  refusal: 3,
  /** A limit ended the turn (`max_tokens`, `max_turn_requests`). */
  limit: 4,
  /** Interrupted (SIGINT or SIGTERM cancelled the turn). */
  interrupted: 130,
} as const;

/** A tool call of the run, as the result document lists it. */
export interface RunToolCall {
  readonly title: string;
  readonly kind: string;
  readonly status: string;
}

/** A refused call: the permission request nobody could answer. */
export interface RunDenial {
  /** The tool call's title. */
  readonly tool: string;
  /** The call's input, as JSON cut to 200 characters. */
  readonly input: string;
  /** Why it was refused. */
  readonly why: string;
  /** The permission rule that refused it, as written (absent when no rule did). */
  readonly rule?: string;
}

/** The turn's budget: the limits in force, the spend, the limit that ended the turn. */
export interface RunBudget {
  readonly limits: Readonly<Record<string, number>>;
  readonly spent: Readonly<Record<string, number>>;
  readonly reached?: string;
}

/** The document of `run --json` (its schema: `docs/run_result.schema.json`). */
export interface RunResult {
  readonly sessionId: string | null;
  readonly stopReason: string | null;
  readonly text: string;
  readonly usage: Record<string, number> | null;
  readonly costUsd: number | null;
  readonly durationMs: number;
  readonly toolCalls: readonly RunToolCall[];
  readonly denied: readonly RunDenial[];
  /** The turn's budget; `null` when the turn did not run the agent loop. */
  readonly budget: RunBudget | null;
  readonly error?: string;
}

/** What {@link runPrompt} needs. */
export interface RunPromptInput {
  /** The composed server (its store, tools, sandbox and rules as in `serve`). */
  readonly server: AgentServer;
  readonly options: RunOptions;
  /** The prompt's text. */
  readonly prompt: string;
  /** The working directory: the session's `cwd`. */
  readonly cwd: string;
  /** Absolute paths of the files to attach. */
  readonly files: readonly string[];
  /** MCP servers for `session/new` (`--mcp-config`). */
  readonly mcpServers: readonly McpServer[];
  /** Writes to stdout. */
  writeStdout(text: string): Promise<void>;
  /** Writes to stderr. */
  writeStderr(text: string): void;
  /** Whether stderr is a terminal (then progress lines carry the elapsed time). */
  readonly stderrIsTerminal: boolean;
  /** Calls `handler` on SIGINT or SIGTERM; returns a function that stops listening. */
  onShutdownSignal(handler: () => void): () => void;
}

/** Why a call that would ask is refused in a run. */
const NOBODY_TO_ASK =
  "it needs permission and nobody is there to ask (a headless run fails closed)";

/**
 * Runs one prompt: opens or continues the session, sends the prompt, prints as the options say
 * (text, `--json`, `--jsonl`), and tells the exit code. Permission requests are refused and
 * listed in `denied`; SIGINT or SIGTERM cancel the turn (exit 130 with what was done).
 *
 * @example One prompt, in process
 * ```ts ignore
 * const code = await runPrompt({ server, options, prompt: "Say hi", cwd, files: [], ... });
 * ```
 *
 * @param input The server, the prompt, the options and the process's streams
 * @returns The exit code ({@link RUN_EXIT})
 */
export async function runPrompt(input: RunPromptInput): Promise<number> {
  const started = performance.now();
  const run = new RunRecorder(input);
  const [clientSide, serverSide] = createMemoryPair();
  const connection = input.server.connect(serverSide);
  const acp = client({ name: "acp-harness run" })
    .onNotification(methods.client.session.update, ({ params }) => run.update(params))
    .onRequest(methods.client.session.requestPermission, ({ params }) => run.refuse(params))
    .connect(clientSide);
  const agent = acp.agent;
  let sessionId: string | undefined;
  let interrupted = false;
  // A signal before the prompt is sent stops the run there; during the turn it cancels it.
  const stopListening = input.onShutdownSignal(() => {
    if (interrupted) return;
    interrupted = true;
    if (sessionId !== undefined) void agent.notify(methods.agent.session.cancel, { sessionId });
  });
  let code: number;
  let stopReason: string | null = null;
  let usage: Record<string, number> | null = null;
  let budget: RunBudget | null = null;
  let error: string | undefined;
  try {
    try {
      await agent.request(methods.agent.initialize, {
        protocolVersion: 1,
        clientCapabilities: {},
        clientInfo: { name: "acp-harness run", version: VERSION },
      });
      sessionId = await openSession(agent, input);
    } catch (failure) {
      input.writeStderr(`acp-harness run: ${messageOf(failure)}\n`);
      return RUN_EXIT.usage;
    }
    try {
      if (interrupted) throw new Error("interrupted before the prompt was sent");
      const response = await agent.request(methods.agent.session.prompt, {
        sessionId,
        prompt: promptBlocks(input.prompt, input.files),
      });
      stopReason = response.stopReason;
      usage = usageOf((response as { usage?: unknown }).usage);
      budget = budgetOf(response._meta);
      code = interrupted || stopReason === "cancelled"
        ? RUN_EXIT.interrupted
        : exitCodeOf(stopReason);
    } catch (failure) {
      error = messageOf(failure);
      code = interrupted ? RUN_EXIT.interrupted : RUN_EXIT.failed;
    }
    const result = run.result({
      sessionId,
      stopReason,
      usage,
      budget,
      durationMs: Math.round(performance.now() - started),
      ...(error === undefined ? {} : { error }),
    });
    await run.print(result);
    return code;
  } finally {
    stopListening();
    await connection.close().catch(() => {});
    acp.close();
  }
}

/** The session a run works in: a new one, `--resume <id>`, or `--continue`'s newest. */
async function openSession(
  agent: ReturnType<ReturnType<typeof client>["connect"]>["agent"],
  input: RunPromptInput,
): Promise<string> {
  let resume = input.options.resume;
  if (input.options.continueLatest) {
    const { sessions } = await agent.request(methods.agent.session.list, { cwd: input.cwd });
    const newest = [...sessions].sort((a, b) =>
      (b.updatedAt ?? "").localeCompare(a.updatedAt ?? "")
    )[0];
    if (newest === undefined) {
      throw new Error(`--continue: no session in "${input.cwd}" to continue`);
    }
    resume = newest.sessionId;
  }
  if (resume !== undefined) {
    try {
      await agent.request(methods.agent.session.resume, {
        sessionId: resume,
        cwd: input.cwd,
        mcpServers: [...input.mcpServers],
      });
    } catch (failure) {
      throw new Error(`--resume ${resume}: ${messageOf(failure)}`);
    }
    return resume;
  }
  try {
    const created = await agent.request(methods.agent.session.new, {
      cwd: input.cwd,
      mcpServers: [...input.mcpServers],
    });
    return created.sessionId;
  } catch (failure) {
    const flag = input.mcpServers.length > 0 ? " (check --mcp-config)" : "";
    throw new Error(`cannot start the session${flag}: ${messageOf(failure)}`);
  }
}

/** The prompt's text, then a resource link for each attached file. */
function promptBlocks(text: string, files: readonly string[]): ContentBlock[] {
  const blocks: ContentBlock[] = [{ type: "text", text }];
  for (const path of files) {
    const name = path.slice(path.lastIndexOf("/") + 1) || path;
    const uri = `file://${path.split("/").map(encodeURIComponent).join("/")}`;
    blocks.push({ type: "resource_link", name, uri });
  }
  return blocks;
}

/** A call's input as JSON, cut to 200 characters. */
function inputSummary(rawInput: unknown): string {
  const input = JSON.stringify(rawInput ?? {}) ?? "";
  return input.length > 200 ? `${input.slice(0, 199)}…` : input;
}

/** The exit code of a stop reason. */
function exitCodeOf(stopReason: string): number {
  switch (stopReason) {
    case "end_turn":
      return RUN_EXIT.ok;
    case "refusal":
      return RUN_EXIT.refusal;
    case "max_tokens":
    case "max_turn_requests":
      return RUN_EXIT.limit;
    case "cancelled":
      return RUN_EXIT.interrupted;
    default:
      return RUN_EXIT.failed;
  }
}

/** The prompt response's `usage` (numbers only), or `null` without one. */
function usageOf(value: unknown): Record<string, number> | null {
  if (value === null || typeof value !== "object") return null;
  const usage: Record<string, number> = {};
  for (const [key, number] of Object.entries(value)) {
    if (typeof number === "number") usage[key] = number;
  }
  return usage;
}

/** The prompt response's `_meta["acp-harness"].budget`, or `null` without one. */
function budgetOf(meta: unknown): RunBudget | null {
  const own = recordOf(recordOf(meta)?.[META_KEY]);
  const budget = recordOf(own?.budget);
  if (!budget) return null;
  const numbers = (value: unknown): Record<string, number> => usageOf(value) ?? {};
  const reached = budget.reached;
  return {
    limits: numbers(budget.limits),
    spent: numbers(budget.spent),
    ...(typeof reached === "string" ? { reached } : {}),
  };
}

function recordOf(value: unknown): Record<string, unknown> | undefined {
  return value !== null && typeof value === "object" && !Array.isArray(value)
    ? value as Record<string, unknown>
    : undefined;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What a run saw: the final message, the tool calls, the refusals, the cost; prints it. */
class RunRecorder {
  readonly #input: RunPromptInput;
  readonly #started = performance.now();
  readonly #calls = new Map<
    string,
    { title: string; kind: string; status: string; rawInput?: unknown }
  >();
  readonly #printed = new Set<string>();
  readonly #denied: RunDenial[] = [];
  /** The calls already listed in `denied` (a refusal answered here, then its update). */
  readonly #deniedIds = new Set<string>();
  #text = "";
  #messageEnded = false;
  #cost: number | null = null;

  constructor(input: RunPromptInput) {
    this.#input = input;
  }

  /** One `session/update`: recorded, and written as a line with `--jsonl`. */
  update(notification: SessionNotification): void {
    if (this.#input.options.output === "jsonl") {
      void this.#input.writeStdout(`${JSON.stringify(notification)}\n`);
    }
    const update = notification.update;
    switch (update.sessionUpdate) {
      case "agent_message_chunk":
        if (update.content.type !== "text") return;
        // The final message: the text after the last tool call.
        if (this.#messageEnded) this.#text = "";
        this.#messageEnded = false;
        this.#text += update.content.text;
        return;
      case "tool_call":
        this.#messageEnded = true;
        this.#calls.set(update.toolCallId, {
          title: update.title,
          kind: update.kind ?? "other",
          status: update.status ?? "pending",
          rawInput: update.rawInput,
        });
        this.#progress(update.toolCallId);
        return;
      case "tool_call_update": {
        const call = this.#calls.get(update.toolCallId) ??
          { title: update.title ?? update.toolCallId, kind: "other", status: "pending" };
        if (update.title) call.title = update.title;
        if (update.kind) call.kind = update.kind;
        if (update.status) call.status = update.status;
        this.#calls.set(update.toolCallId, call);
        this.#refused(update.toolCallId, update._meta);
        this.#progress(update.toolCallId);
        return;
      }
      case "usage_update":
        if (update.cost?.currency === "USD") this.#cost = update.cost.amount;
        return;
      default:
        return;
    }
  }

  /** Answers a permission request: refused (nobody to ask), and listed. */
  refuse(request: RequestPermissionRequest): RequestPermissionResponse {
    const { toolCallId } = request.toolCall;
    const tool = request.toolCall.title ?? this.#calls.get(toolCallId)?.title ?? toolCallId;
    this.#deny(toolCallId, {
      tool,
      input: inputSummary(request.toolCall.rawInput ?? this.#calls.get(toolCallId)?.rawInput),
      why: NOBODY_TO_ASK,
    }, "nobody to ask");
    const reject = request.options.find((option) => option.kind === "reject_once") ??
      request.options.find((option) => option.kind.startsWith("reject"));
    return reject
      ? { outcome: { outcome: "selected", optionId: reject.optionId } }
      : { outcome: { outcome: "cancelled" } };
  }

  /** A call the server refused (a rule, the mode, a remembered answer): listed once. */
  #refused(toolCallId: string, meta: unknown): void {
    const denied = recordOf(recordOf(recordOf(meta)?.[META_KEY])?.denied);
    if (!denied || typeof denied.reason !== "string") return;
    const call = this.#calls.get(toolCallId);
    const rule = typeof denied.rule === "string" ? denied.rule : undefined;
    this.#deny(toolCallId, {
      tool: call?.title ?? toolCallId,
      input: inputSummary(call?.rawInput),
      why: denied.reason,
      ...(rule === undefined ? {} : { rule }),
    }, rule === undefined ? "refused" : `rule ${rule}`);
  }

  #deny(toolCallId: string, denial: RunDenial, short: string): void {
    if (this.#deniedIds.has(toolCallId)) return;
    this.#deniedIds.add(toolCallId);
    this.#denied.push(denial);
    if (this.#input.options.output === "text") {
      this.#input.writeStderr(`denied: ${denial.tool} (${short})\n`);
    }
  }

  /** The result document. */
  result(
    ending: Pick<
      RunResult,
      "sessionId" | "stopReason" | "usage" | "budget" | "durationMs" | "error"
    >,
  ): RunResult {
    return {
      sessionId: ending.sessionId,
      stopReason: ending.stopReason,
      text: this.#text,
      usage: ending.usage,
      costUsd: this.#cost,
      durationMs: ending.durationMs,
      toolCalls: [...this.#calls.values()].map(({ title, kind, status }) => ({
        title,
        kind,
        status,
      })),
      denied: [...this.#denied],
      budget: ending.budget,
      ...(ending.error === undefined ? {} : { error: ending.error }),
    };
  }

  /** Prints the result: the document (`--json`, `--jsonl`) or the final message. */
  async print(result: RunResult): Promise<void> {
    const { output } = this.#input.options;
    if (output === "json") {
      await this.#input.writeStdout(`${JSON.stringify(result, null, 2)}\n`);
      return;
    }
    if (output === "jsonl") {
      await this.#input.writeStdout(`${JSON.stringify(result)}\n`);
      return;
    }
    if (result.error !== undefined) this.#input.writeStderr(`error: ${result.error}\n`);
    else if (result.stopReason !== "end_turn") {
      this.#input.writeStderr(`stopped: ${result.stopReason}\n`);
    }
    if (result.text !== "") {
      await this.#input.writeStdout(result.text.endsWith("\n") ? result.text : `${result.text}\n`);
    }
  }

  /** A progress line on stderr (text mode) once a tool call has its final status. */
  #progress(toolCallId: string): void {
    if (this.#input.options.output !== "text") return;
    const call = this.#calls.get(toolCallId);
    if (!call || (call.status !== "completed" && call.status !== "failed")) return;
    if (this.#printed.has(toolCallId)) return;
    this.#printed.add(toolCallId);
    const elapsed = this.#input.stderrIsTerminal
      ? ` (${((performance.now() - this.#started) / 1000).toFixed(1)}s)`
      : "";
    this.#input.writeStderr(
      `${call.status === "completed" ? "done" : "failed"}: ${call.title}${elapsed}\n`,
    );
  }
}
