/**
 * A `Session` with a provider that tells the summary request from the turn's, a real in-memory
 * store and a sink that keeps the updates: for the compaction and slash command tests.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { Host } from "../../src/host/host.ts";
import type { ModelCatalog, ModelInfo } from "../../src/llm/catalog.ts";
import {
  type LlmEvent,
  type LlmMessage,
  type LlmProvider,
  type LlmRequest,
  ProviderError,
} from "../../src/llm/provider.ts";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import type { CompactionNotices } from "../../src/compaction/compactor.ts";
import { Session } from "../../src/session/session.ts";
import type { SessionCommands } from "../../src/tools/session_commands.ts";
import { type RestoredSession, restoreSession } from "../../src/session/restore.ts";
import { MemoryAttachmentStore } from "../../src/store/memory_attachment_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import type { Workspace } from "../../src/tools/workspace.ts";
import { schemaProblems } from "../_helpers/acp_schema.ts";
import { sessionServices } from "../_helpers/server.ts";
import { captureLogger, modelInfo } from "./_fakes.ts";

/** One answer of a turn request: text, or a provider failure. */
type Answer = string | ProviderError;

/**
 * Answers summary requests (no tools, the compaction system prompt) with `summary` and turn
 * requests with the queued answers (an echo of the prompt when none is queued); records both.
 */
export class RoutingProvider implements LlmProvider {
  readonly id = "fake";
  readonly turns: LlmRequest[] = [];
  readonly summaries: LlmRequest[] = [];
  readonly answers: Answer[] = [];
  summary: string | ProviderError = "The user asked for long texts; all were written.";
  /** When set, the summary request waits for the abort. */
  holdSummary = false;
  /** Told when a summary request starts. */
  onSummary: () => void = () => {};

  async *stream(request: LlmRequest, options: { signal: AbortSignal }): AsyncIterable<LlmEvent> {
    const summarizing = request.system.startsWith("You compact");
    // A copy: the history array changes after the request.
    const copy = { ...request, messages: [...request.messages] };
    if (summarizing) {
      this.summaries.push(copy);
      this.onSummary();
      if (this.holdSummary) {
        await new Promise<void>((resolve) => {
          if (options.signal.aborted) resolve();
          options.signal.addEventListener("abort", () => resolve(), { once: true });
        });
        return yield { type: "finish", reason: "aborted" };
      }
      const answer = this.summary;
      if (answer instanceof ProviderError) {
        return yield { type: "finish", reason: "error", error: answer };
      }
      // Two deltas, so a client that takes them sees chunks.
      const half = Math.floor(answer.length / 2);
      yield { type: "text-delta", text: answer.slice(0, half) };
      yield { type: "text-delta", text: answer.slice(half) };
      yield { type: "usage", usage: { input: 300, output: 40 } };
      return yield { type: "finish", reason: "stop" };
    }
    this.turns.push(copy);
    const answer = this.answers.shift() ?? echo(request.messages);
    if (answer instanceof ProviderError) {
      return yield { type: "finish", reason: "error", error: answer };
    }
    yield { type: "text-delta", text: answer };
    yield { type: "finish", reason: "stop" };
  }
}

function echo(messages: readonly LlmMessage[]): string {
  const last = messages.findLast((message) => message.role === "user");
  const text = last?.role === "user" && last.content[0]?.type === "text"
    ? last.content[0].text
    : "";
  return `Echo: ${text}`;
}

/** A catalog of the given models, all served by `provider`. */
export function catalogOf(provider: LlmProvider, models: readonly ModelInfo[]): ModelCatalog {
  const byId = (id: string) => models.find((model) => model.id === id);
  return {
    info: byId,
    list: () => models,
    has: (id: string) => byId(id) !== undefined,
    resolve: (id: string) => {
      const info = byId(id);
      if (!info) throw new RangeError(`Unknown model "${id}"`);
      return { info, provider };
    },
  } as unknown as ModelCatalog;
}

export const WINDOW = 4_000;
export const INFO = modelInfo({ contextWindow: WINDOW });
export const OTHER = modelInfo({ id: "fake/other", model: "other", name: "Other model" });

export interface Harness {
  readonly session: Session;
  readonly provider: RoutingProvider;
  readonly store: MemorySessionStore;
  readonly updates: SessionUpdate[];
  readonly lines: string[];
  prompt(text: string): Promise<string>;
  records(): Promise<StoredEvent[]>;
  restored(): Promise<RestoredSession>;
}

export async function harness(
  options: {
    notices?: CompactionNotices;
    store?: MemorySessionStore;
    provider?: RoutingProvider;
    restored?: RestoredSession;
    info?: ModelInfo;
    commands?: SessionCommands;
  } = {},
): Promise<Harness> {
  const store = options.store ?? new MemorySessionStore();
  const provider = options.provider ?? new RoutingProvider();
  const info = options.info ?? INFO;
  if (!options.store) {
    await store.create({
      version: 1,
      id: "s1",
      cwd: "/work",
      additionalDirectories: [],
      createdAt: new Date(0).toISOString(),
    });
  }
  const attachments = new MemoryAttachmentStore();
  const { logger, lines } = captureLogger();
  const updates: SessionUpdate[] = [];
  const session = new Session({
    services: sessionServices({
      settings: { maxSteps: 10 },
      catalog: catalogOf(provider, [info, OTHER]),
      host: {} as Host,
      files: {} as Host,
      now: () => 0,
      store,
      attachments,
    }),
    id: "s1",
    cwd: "/work",
    additionalDirectories: [],
    selection: { model: info.id, mode: "ask" },
    tools: [],
    workspace: {} as Workspace,
    ask: () => Promise.resolve("allow_once"),
    sink: (update) => {
      updates.push(update);
      return Promise.resolve();
    },
    logger,
    ...(options.notices ? { notices: options.notices } : {}),
    ...(options.restored ? { restored: options.restored } : {}),
    ...(options.commands ? { commands: options.commands } : {}),
  });
  session.start();
  const records = async () =>
    ((await store.load("s1"))?.records ?? []).map(({ seq: _seq, time: _time, ...event }) =>
      event as StoredEvent
    );
  return {
    session,
    provider,
    store,
    updates,
    lines,
    prompt: (text) => session.prompt([{ type: "text", text }], new AbortController().signal),
    records,
    restored: async () => restoreSession((await store.load("s1"))!, attachments, logger),
  };
}

/** A prompt of about 500 tokens. */
export const long = (tag: string): string => `${tag}: ${"lorem ipsum ".repeat(166)}`;

export function kinds(updates: readonly SessionUpdate[]): string[] {
  return updates.map((update) => update.sessionUpdate);
}

export function assertValid(updates: readonly SessionUpdate[]): void {
  for (const update of updates) {
    assert.deepEqual(
      schemaProblems({
        jsonrpc: "2.0",
        method: "session/update",
        params: { sessionId: "s1", update },
      }),
      [],
      JSON.stringify(update).slice(0, 200),
    );
  }
}
