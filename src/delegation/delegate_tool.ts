/**
 * The `delegate` tool: runs a prompt on another ACP agent, started as a child process over stdio,
 * in a session on the same workspace.
 *
 * @module
 */
import type { AgentConfig } from "../config/config.ts";
import type { PermissionMode } from "../permission/mode.ts";
import type { HostProcesses } from "../host/host.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import type { PermissionAnswer } from "../permission/policy.ts";
import {
  type AgentClient,
  connectAgentClient,
  type NewSessionResponse,
  type PermissionOption,
  type RequestPermissionRequest,
  type RequestPermissionResponse,
} from "../protocol/agent_client.ts";
import type { SessionCleanups } from "../session/session_disposer.ts";
import type { Tool, ToolContext, ToolKind, ToolResult } from "../tools/tool.ts";
import { AgentProcess, type StopGrace } from "./agent_process.ts";
import { DelegationView } from "./delegation_view.ts";
import { redactSecrets, stderrTail } from "./stderr_tail.ts";
import { traceMeta } from "../telemetry/telemetry.ts";
import { META_KEY } from "../util/meta_key.ts";

/** The tool's name. */
export const DELEGATE_TOOL_NAME = "delegate";

/** How long an agent has to start and answer `initialize` and `session/new`, by default. */
export const DEFAULT_AGENT_START_TIMEOUT_MS = 60_000;

/**
 * How long a cancelled agent has to answer its prompt (`cancelled`) before it is stopped anyway.
 */
export const CANCEL_ANSWER_GRACE_MS = 2000;

const TOOL_KINDS: readonly ToolKind[] = [
  "read",
  "edit",
  "delete",
  "move",
  "search",
  "execute",
  "think",
  "fetch",
  "switch_mode",
  "other",
];

/** What a {@link delegateTool} is built from. */
export interface DelegateToolOptions {
  /** The agents it can start, by name (at least one). */
  readonly agents: Readonly<Record<string, AgentConfig>>;
  /** Where agents are started (the host: their process groups die with the server). */
  readonly processes: Pick<HostProcesses, "spawn">;
  /** This server's delegation depth; agents are told this plus one. */
  readonly depth: number;
  /**
   * The session's clean-ups: the agents still running when the session ends are stopped then.
   */
  readonly disposer: SessionCleanups;
  /**
   * Values a failure message must not quote from an agent's stderr (the server's API keys and
   * token; see `serverSecretEnv`). @default {[]}
   */
  readonly secrets?: readonly string[];
  /** Told of each delegation's start, end and failures. @default {nullLogger} */
  readonly logger?: Logger;
  /** How long each stop tier waits. @default {DEFAULT_STOP_GRACE} */
  readonly grace?: StopGrace;
  /**
   * Milliseconds an agent has to answer `initialize`, `session/new` and the mode change.
   * @default {DEFAULT_AGENT_START_TIMEOUT_MS}
   */
  readonly startTimeoutMs?: number;
}

/** One running delegation. */
interface Run {
  readonly name: string;
  readonly agent: AgentConfig;
  readonly prompt: string;
  readonly context: ToolContext;
  /** Whether the session has ended (an agent started now is stopped at once). */
  readonly ended: () => boolean;
  /** What the client is shown of the agent's work. */
  view?: DelegationView;
  agentProcess?: AgentProcess;
  client?: AgentClient;
  sessionId?: string;
}

/** Why a delegation failed, and at which stage. */
class DelegationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DelegationError";
  }
}

/**
 * The `delegate` tool of one session: `{agent, prompt}` starts the named agent (over stdio, its
 * own process group), `initialize`s it (no file-system or terminal capability offered),
 * opens a session in the session's cwd, sets the agent's `mode` option to the prompt's
 * permission mode when it offers that value, runs the prompt and returns the agent's stop reason
 * and final text. Meanwhile the agent's text and tool calls show in the call's content, and its
 * permission requests are answered under the session's mode (`ask`: the session's client is
 * asked). A cancelled call sends `session/cancel` down. The agent is then stopped in tiers (stdin
 * EOF, SIGTERM, SIGKILL); those still running when the session ends are stopped with it.
 *
 * Its effect is `external`: the `read-only` mode refuses it and `ask` asks before an agent starts.
 *
 * @example A tool for one agent
 * ```ts
 * import assert from "node:assert/strict";
 * import { NodeHost } from "../host/node_host.ts";
 * import { SessionDisposer } from "../session/session_disposer.ts";
 * import { delegateTool } from "./delegate_tool.ts";
 * const disposer = new SessionDisposer();
 * const tool = delegateTool({
 *   agents: { helper: { command: "acp-harness", description: "A second pair of hands" } },
 *   processes: new NodeHost(),
 *   depth: 0,
 *   disposer,
 * });
 * assert.equal(tool.name, "delegate");
 * assert.equal(tool.effect, "external");
 * await disposer.dispose();
 * ```
 *
 * @param options The agents, the host and the session's clean-ups
 * @returns The tool
 */
export function delegateTool(options: DelegateToolOptions): Tool {
  const names = Object.keys(options.agents);
  const running = new Set<Run>();
  let ended = false;
  options.disposer.defer(async () => {
    ended = true;
    await Promise.all([...running].map((run) => stopRun(run)));
  });
  const list = names.map((name) => `- ${name}: ${options.agents[name]?.description}`).join("\n");
  return {
    name: DELEGATE_TOOL_NAME,
    description: "Hands a task to another agent, which works in the same workspace with its own " +
      "tools and returns its final answer. Give it a complete, self-contained prompt: it does " +
      `not see this conversation. Agents:\n${list}`,
    inputSchema: {
      type: "object",
      properties: {
        agent: { type: "string", enum: names, description: "Which agent" },
        prompt: { type: "string", description: "The task, complete and self-contained" },
      },
      required: ["agent", "prompt"],
      additionalProperties: false,
    },
    kind: "other",
    effect: "external",
    title(input: unknown): string {
      const agent = (input as { agent?: unknown } | null)?.agent;
      return typeof agent === "string" ? `Delegate to ${agent}` : "Delegate";
    },
    async execute(input: unknown, context: ToolContext): Promise<ToolResult> {
      const parsed = readInput(input, options.agents);
      if (typeof parsed === "string") return { content: parsed, isError: true };
      if (context.signal.aborted) return cancelled(parsed.name);
      if (ended) return failure(`Cannot delegate to "${parsed.name}": the session has ended`);
      const run: Run = { ...parsed, context, ended: () => ended };
      running.add(run);
      try {
        return await delegate(run, options);
      } finally {
        await stopRun(run);
        running.delete(run);
      }
    },
  };
}

/** The input, checked: the agent's name and config and the prompt, or what is wrong. */
function readInput(
  input: unknown,
  agents: Readonly<Record<string, AgentConfig>>,
): { name: string; agent: AgentConfig; prompt: string } | string {
  const { agent: name, prompt } = (input ?? {}) as { agent?: unknown; prompt?: unknown };
  const known = Object.keys(agents).join(", ");
  if (typeof name !== "string" || !Object.hasOwn(agents, name)) {
    return `Invalid input: "agent" must be one of ${known}`;
  }
  if (typeof prompt !== "string" || prompt.trim() === "") {
    return `Invalid input: "prompt" must be a non-empty string`;
  }
  return { name, agent: agents[name] as AgentConfig, prompt };
}

/** Runs one delegation; its process is stopped by the caller. */
async function delegate(run: Run, options: DelegateToolOptions): Promise<ToolResult> {
  const logger = options.logger ?? nullLogger;
  const { name, context } = run;
  const { signal } = context;
  const facts = { sessionId: context.sessionId, toolCallId: context.toolCallId, agent: name };
  const view = new DelegationView((display) => context.progress?.(display));
  run.view = view;
  try {
    try {
      run.agentProcess = await AgentProcess.start({
        processes: options.processes,
        agent: run.agent,
        cwd: context.cwd,
        depth: options.depth + 1,
        ...(options.grace ? { grace: options.grace } : {}),
      });
    } catch (error) {
      logger.warn("delegate: cannot start the agent", { ...facts, error: String(error) });
      return failure(`Cannot start agent "${name}": ${message(error)}`);
    }
    logger.info("delegate: agent started", { ...facts, pid: run.agentProcess.pid });
    if (run.ended()) return failure(`Cannot delegate to "${name}": the session has ended`);
    const client = connectAgentClient(run.agentProcess.input, run.agentProcess.output, {
      onUpdate: (notification) => {
        if (notification.sessionId === run.sessionId) view.apply(notification.update);
      },
      onPermission: (request, withdrawn) => answerPermission(run, request, withdrawn, logger),
    });
    run.client = client;
    const sessionId = await handshake(run, options.startTimeoutMs);
    if (signal.aborted) return cancelled(name);
    const answer = await promptUntilCancelled(run, client, sessionId, logger);
    if (answer === "cancelled") return cancelled(name);
    view.close();
    const text = view.finalText();
    logger.info("delegate: agent ended its turn", { ...facts, stopReason: answer });
    const content = `Agent "${name}" stopped: ${answer}${text ? `\n\n${text}` : ""}`;
    return {
      content,
      isError: answer !== "end_turn",
      display: [...view.display(), { type: "text", text: `Stopped: ${answer}` }],
      // The child's session id: a client loads it from the agent's store (the same data directory
      // when the agent is an acp-harness that shares it).
      rawOutput: { agent: name, sessionId, stopReason: answer, text },
    };
  } catch (error) {
    if (signal.aborted) return cancelled(name);
    const exit = await run.agentProcess?.stop();
    const stderr = run.agentProcess &&
      stderrTail(run.agentProcess.stderrTail, {
        secrets: options.secrets ?? [],
        truncated: run.agentProcess.stderrTruncated,
      });
    const why = redactSecrets(message(error), options.secrets ?? []);
    logger.warn("delegate: failed", { ...facts, error: why, exit });
    return failure(
      `${why}${exit ? ` (agent exited with ${exit.signal ?? `code ${exit.code}`})` : ""}${
        stderr ? `\nIts stderr ends with:\n${stderr}` : ""
      }`,
    );
  } finally {
    view.close();
  }
}

/**
 * `initialize`, then `session/new` in the session's cwd, then the agent's mode set to the
 * session's (when it offers it), within the start timeout.
 */
async function handshake(run: Run, startTimeoutMs?: number): Promise<string> {
  const { name, context } = run;
  const client = run.client as AgentClient;
  const timeoutMs = startTimeoutMs ?? DEFAULT_AGENT_START_TIMEOUT_MS;
  const timeout = new AbortController();
  const timer = setTimeout(() => timeout.abort(), timeoutMs);
  const signal = AbortSignal.any([context.signal, timeout.signal]);
  const stage = async <T>(what: string, step: () => Promise<T>): Promise<T> => {
    try {
      return await step();
    } catch (error) {
      if (context.signal.aborted) throw error;
      const why = timeout.signal.aborted ? `no answer within ${timeoutMs} ms` : message(error);
      throw new DelegationError(`Agent "${name}" failed at ${what}: ${why}`);
    }
  };
  try {
    await stage("initialize", () => client.initialize({ signal }));
    const meta = { ...traceMeta(context.telemetry), ...parentMeta(context) };
    const session = await stage(
      "session/new",
      () => client.newSession(context.cwd, { signal, meta }),
    );
    run.sessionId = session.sessionId;
    const mode = context.mode;
    if (mode) await stage("setting its mode", () => matchMode(client, session, mode, signal));
    return session.sessionId;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `_meta["acp-harness"]` of the agent's `session/new`: `parent`, this session and the `delegate`
 * call, which an acp-harness agent records as its session's parent, and `worktree: false` (other
 * agents ignore both).
 */
function parentMeta(context: ToolContext): Record<string, unknown> {
  const { sessionId, toolCallId } = context;
  // The agent works in this session's directory (its worktree, when it has one): an acp-harness
  // with `--worktrees` would otherwise branch off again, where this session never sees its edits.
  const own = toolCallId === undefined ? {} : { parent: { sessionId, toolCallId } };
  return { [META_KEY]: { ...own, worktree: false } };
}

/** Sets the agent's permission mode to `mode` when it offers that value. */
async function matchMode(
  client: AgentClient,
  session: NewSessionResponse,
  mode: PermissionMode,
  signal: AbortSignal,
): Promise<void> {
  const option = session.configOptions?.find((option) =>
    option.id === "mode" && option.type === "select"
  );
  if (option?.type === "select") {
    if (option.currentValue === mode) return;
    const values = option.options.flatMap((entry) => "group" in entry ? entry.options : [entry]);
    if (values.some((value) => value.value === mode)) {
      await client.setConfigOption(session.sessionId, "mode", mode, { signal });
    }
    return;
  }
  const modes = session.modes;
  if (modes && modes.currentModeId !== mode && modes.availableModes.some((m) => m.id === mode)) {
    await client.setMode(session.sessionId, mode, { signal });
  }
}

/**
 * Runs the prompt; when the call is cancelled, sends `session/cancel` and waits a little for the
 * agent's answer.
 */
async function promptUntilCancelled(
  run: Run,
  client: AgentClient,
  sessionId: string,
  logger: Logger,
): Promise<string> {
  const { signal } = run.context;
  const meta = traceMeta(run.context.telemetry);
  const prompt = client.prompt(sessionId, run.prompt, meta ? { meta } : undefined).then(
    (response) => response.stopReason as string,
    (error: unknown) => {
      throw new DelegationError(`Agent "${run.name}" failed during its prompt: ${message(error)}`);
    },
  );
  let onAbort = (): void => {};
  const aborted = new Promise<"cancelled">((resolve) => {
    onAbort = () => resolve("cancelled");
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  try {
    const first = await Promise.race([prompt, aborted]);
    if (first !== "cancelled" || !signal.aborted) return first;
  } catch (error) {
    if (!signal.aborted) throw error;
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
  prompt.catch(() => {});
  await client.cancel(sessionId).catch(() => {});
  let timer: ReturnType<typeof setTimeout> | undefined;
  const answered = await Promise.race([
    prompt.then((stopReason) => stopReason, () => "failed"),
    new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), CANCEL_ANSWER_GRACE_MS);
    }),
  ]);
  clearTimeout(timer);
  logger.info("delegate: cancelled", {
    sessionId: run.context.sessionId,
    toolCallId: run.context.toolCallId,
    agent: run.name,
    answer: answered ?? `none within ${CANCEL_ANSWER_GRACE_MS} ms`,
  });
  return "cancelled";
}

/**
 * Answers the agent's permission request under the session's mode: `auto` allows, `read-only`
 * refuses, `ask` asks the session's client (under the delegate call's id) and picks the agent's
 * option of the kind the user chose. Fails closed: without an option to choose, `cancelled`.
 */
async function answerPermission(
  run: Run,
  request: RequestPermissionRequest,
  withdrawn: AbortSignal,
  logger: Logger,
): Promise<RequestPermissionResponse> {
  const { context, name } = run;
  const mode = context.mode ?? "ask";
  let answer: PermissionAnswer | "cancelled";
  if (mode === "auto") answer = "allow_once";
  else if (mode === "read-only" || !context.askPermission) answer = "reject_once";
  else {
    // The client sees what the agent did before it asks.
    run.view?.flush();
    const call = request.toolCall;
    answer = await context.askPermission({
      title: `${name}: ${call.title ?? "a tool call"}`,
      kind: TOOL_KINDS.includes(call.kind as ToolKind) ? call.kind as ToolKind : "other",
      ...(call.rawInput === undefined ? {} : { rawInput: call.rawInput }),
      locations: (call.locations ?? []).map(({ path, line }) =>
        typeof line === "number" ? { path, line } : { path }
      ),
      signal: withdrawn,
    });
  }
  const option = answer === "cancelled" ? undefined : optionFor(request.options, answer);
  logger.info("delegate: answered the agent's permission request", {
    sessionId: context.sessionId,
    toolCallId: context.toolCallId,
    agent: name,
    mode,
    answer,
    optionId: option?.optionId,
  });
  return option
    ? { outcome: { outcome: "selected", optionId: option.optionId } }
    : { outcome: { outcome: "cancelled" } };
}

/** The agent's option of the answer's kind, else one of the same sense (allow or reject). */
function optionFor(
  options: readonly PermissionOption[],
  answer: PermissionAnswer,
): PermissionOption | undefined {
  const allow = answer.startsWith("allow");
  return options.find((option) => option.kind === answer) ??
    options.find((option) => option.kind.startsWith(allow ? "allow" : "reject"));
}

/** Ends a run: its connection, then its process, in tiers. */
async function stopRun(run: Run): Promise<void> {
  const child = run.agentProcess;
  if (!child) return;
  // The agent's input ends first (EOF): it winds down; the connection ends with its output.
  await child.stop();
  run.client?.close();
}

function cancelled(name: string): ToolResult {
  return { content: `Delegation to "${name}" was cancelled`, isError: true };
}

function failure(content: string): ToolResult {
  return { content, isError: true };
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
