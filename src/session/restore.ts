/**
 * How a stored log becomes a live session again: the conversation as the model sees it, the
 * selection, grants, title and cost, and the repair of a turn the process never finished. For
 * `session/load`, the same pass makes the updates that replay the log (`./replay.ts`).
 *
 * @module
 */
import type { LlmContentPart, LlmMessage } from "../llm/provider.ts";
import type { Logger } from "../log/logger.ts";
import type { PermissionMode } from "../permission/mode.ts";
import { isSandboxLevel } from "../sandbox/sandbox.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";
import type {
  AttachmentStore,
  LoadedSession,
  StoredEvent,
  StoredRecord,
} from "../store/session_store.ts";
import type { CompactionNotices } from "../compaction/compactor.ts";
import { applyCompaction } from "../compaction/history_compaction.ts";
import { bytesToBase64 } from "../util/base64.ts";
import { replayRecord, usageUpdate } from "./replay.ts";
import { missingMarker, storedToolParts } from "./stored_content.ts";
import type { CheckpointRecord } from "./checkpoints.ts";

/** `T` with its fields writable: an object built field by field before it is handed on. */
type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** A session's state rebuilt from its log. */
export interface RestoredSession {
  /** The conversation, as the model sees it. */
  readonly history: LlmMessage[];
  /** The last recorded model, mode and effort. */
  readonly selection?: {
    readonly model: string;
    readonly mode: PermissionMode;
    readonly effort?: string;
  };
  /** Remembered "always" answers. */
  readonly grants: Map<string, "allow_always" | "reject_always">;
  readonly title?: string;
  /** Cumulative cost in USD. */
  readonly cost: number;
  /**
   * Tokens spent, input plus output of every model request (session token budgets count them).
   * @default {0}
   */
  readonly tokens?: number;
  /** The session's own budgets, as last recorded (a client's lower limits). */
  readonly budgets?: Extract<StoredEvent, { type: "budgets" }>["limits"];
  /** The log's `checkpoint` events, in order (see `./checkpoints.ts`). */
  readonly checkpoints?: readonly CheckpointRecord[];
  /**
   * The checkpoint the last `/undo` or `/restore` took the files to (its id), unless a turn's
   * checkpoint came after it: where the next `/undo` starts from.
   */
  readonly checkpointCursor?: string;
  /** Events that close a turn the process never finished (already applied to `history`). */
  readonly repair: StoredEvent[];
  /**
   * The latest `usage_update` (context and cost so far) of a session reopened without replay
   * (`session/resume`), for the client after the answer; absent when replayed or when no usage
   * record says the context size.
   */
  readonly usage?: SessionUpdate;
}

/** The note a tool call gets when the server stopped before it finished. */
export const INTERRUPTED_TOOL_RESULT =
  "Interrupted: the server stopped before this tool call finished; it may or may not have run.";

/**
 * Rebuilds a session from its log: the conversation, selection, grants, title and cost. A turn
 * without an end is closed as interrupted: its unfinished tool calls get failed results (the
 * model must see a result for every call) and a `turn_end` with `interrupted`; those events are
 * returned in `repair` for the caller to append.
 *
 * @param loaded The log
 * @param attachments Image bytes (a missing or corrupt one becomes a text marker)
 * @param logger Told about missing attachments
 * @returns The restored state
 */
export async function restoreSession(
  loaded: LoadedSession,
  attachments: AttachmentStore,
  logger: Logger,
): Promise<RestoredSession> {
  const restorer = new SessionRestorer({
    attachments,
    logger,
    sessionId: loaded.header.id,
    replay: false,
  });
  await restorer.add(loaded.records);
  return restorer.finish().restored;
}

/** Options of a {@link SessionRestorer}. */
export interface SessionRestorerOptions {
  /** Image bytes (a missing or corrupt one becomes a text marker). */
  readonly attachments: AttachmentStore;
  /** Told about missing attachments. */
  readonly logger: Logger;
  /** The session, for log lines. */
  readonly sessionId: string;
  /** Build the updates that replay the log too (`session/load`). */
  readonly replay: boolean;
  /** What the client takes to be shown compactions. @default {neither} */
  readonly notices?: CompactionNotices;
  /**
   * The session runs elsewhere (an observer's replay): a turn without an end is running, not
   * interrupted, so the replay shows no repair. @default {false}
   */
  readonly running?: boolean;
}

/**
 * Rebuilds a session from its records as they are read ({@link restoreSession} a batch at a
 * time) and, for `session/load`, makes the updates that replay them ({@link replayUpdates}) on
 * the way: each batch's updates can go to the client before the next batch is read.
 *
 * @example Restoring a log with an interrupted turn while replaying it
 * ```ts
 * import assert from "node:assert/strict";
 * import { nullLogger } from "../log/logger.ts";
 * import { MemoryAttachmentStore } from "../store/memory_attachment_store.ts";
 * import { SessionRestorer } from "./restore.ts";
 * const restorer = new SessionRestorer({
 *   attachments: new MemoryAttachmentStore(), logger: nullLogger, sessionId: "s1", replay: true,
 * });
 * const time = "2026-01-01T00:00:00.000Z";
 * const updates = await restorer.add([
 *   { type: "turn_start", seq: 1, time },
 *   { type: "user", messageId: "m1", content: [{ type: "text", text: "hi" }], seq: 2, time },
 * ]);
 * assert.equal(updates[0]?.sessionUpdate, "user_message_chunk");
 * const { restored } = restorer.finish();
 * assert.equal(restored.history.length, 1);
 * assert.deepEqual(restored.repair, [{ type: "turn_end", stopReason: "interrupted" }]);
 * ```
 */
export class SessionRestorer {
  readonly #options: SessionRestorerOptions;
  readonly #state: RestoreState = {
    history: [],
    grants: new Map(),
    pendingCalls: new Map(),
    selection: undefined,
    title: undefined,
    cost: 0,
    tokens: 0,
    open: false,
  };
  /** The latest usage record that says the context size: replayed once, at the end. */
  #usage: Extract<StoredEvent, { type: "usage" }> | undefined;

  /** @param options Attachments, logger, session id, and whether to replay */
  constructor(options: SessionRestorerOptions) {
    this.#options = options;
  }

  /**
   * Applies the next records, in log order.
   *
   * @param records The records
   * @returns The updates that replay them (none without `replay`; usage waits for the end)
   */
  async add(records: readonly StoredRecord[]): Promise<SessionUpdate[]> {
    const updates: SessionUpdate[] = [];
    const replay = this.#options.replay;
    for (const record of records) {
      if (record.type === "user") await this.#user(record, replay ? updates : undefined);
      else {
        restoreRecord(this.#state, record);
        if (replay) this.#replay(record, updates);
        else if (record.type === "usage" && record.size !== undefined) this.#usage = record;
      }
    }
    return updates;
  }

  /** Adds the updates of a record other than a user message (the latest usage is kept). */
  #replay(record: StoredRecord, updates: SessionUpdate[]): void {
    if (record.type === "usage") {
      if (record.size !== undefined) this.#usage = record;
    } else replayRecord(record, updates, this.#options.notices);
  }

  /**
   * Closes an interrupted turn (see {@link restoreSession}) once every record was added.
   *
   * @returns The restored state, and the last updates of the replay: the interrupted tool calls'
   *   failures and the latest usage (none without `replay`)
   */
  finish(): { readonly restored: RestoredSession; readonly updates: SessionUpdate[] } {
    const state = this.#state;
    const repair = repairOf(state);
    const updates: SessionUpdate[] = [];
    if (this.#options.replay) {
      if (!this.#options.running) { for (const event of repair) replayRecord(event, updates); }
      const usage = this.#usage && usageUpdate(this.#usage);
      if (usage) updates.push(usage);
    }
    const restored: RestoredSession = {
      history: state.history,
      ...(state.selection ? { selection: state.selection } : {}),
      grants: state.grants,
      ...(state.title === undefined ? {} : { title: state.title }),
      cost: state.cost,
      tokens: state.tokens,
      ...(state.budgets ? { budgets: state.budgets } : {}),
      ...(state.checkpoints ? { checkpoints: state.checkpoints } : {}),
      ...(state.checkpointCursor ? { checkpointCursor: state.checkpointCursor } : {}),
      repair,
    };
    const usage = !this.#options.replay && this.#usage ? usageUpdate(this.#usage) : undefined;
    return { restored: usage ? { ...restored, usage } : restored, updates };
  }

  /** A user message: into the history, and its parts as updates (images fetched once for both). */
  async #user(
    record: Extract<StoredEvent, { type: "user" }>,
    updates: SessionUpdate[] | undefined,
  ): Promise<void> {
    const content: LlmContentPart[] = [];
    for (const part of record.content) {
      let text: string;
      if (part.type === "text") {
        content.push(part);
        text = part.text;
      } else {
        const { attachments, logger, sessionId } = this.#options;
        const bytes = await attachments.get(part.sha256);
        if (bytes) {
          const data = bytesToBase64(bytes);
          content.push({ type: "image", mimeType: part.mimeType, data });
          updates?.push({
            sessionUpdate: "user_message_chunk",
            messageId: record.messageId,
            content: { type: "image", mimeType: part.mimeType, data },
          });
          continue;
        }
        text = missingMarker(part, logger, sessionId);
        content.push({ type: "text", text });
      }
      updates?.push({
        sessionUpdate: "user_message_chunk",
        messageId: record.messageId,
        content: { type: "text", text },
      });
    }
    this.#state.history.push({ role: "user", content });
  }
}

/** What {@link SessionRestorer} builds up, record by record. */
interface RestoreState {
  readonly history: LlmMessage[];
  readonly grants: Map<string, "allow_always" | "reject_always">;
  /** Tool calls announced by the model without a result yet, by id. */
  readonly pendingCalls: Map<string, string>;
  selection: RestoredSession["selection"];
  title: string | undefined;
  cost: number;
  tokens: number;
  budgets?: RestoredSession["budgets"];
  checkpoints?: CheckpointRecord[];
  checkpointCursor?: string;
  /** Whether a turn started and has not ended. */
  open: boolean;
}

/** Applies one record (other than a user message) to the restored state. */
function restoreRecord(state: RestoreState, record: StoredRecord | StoredEvent): void {
  switch (record.type) {
    case "turn_start":
    case "turn_end":
      state.open = record.type === "turn_start";
      break;
    case "assistant": {
      // Optional fields set one by one: cheaper than spreads, on every message of a long log.
      const message: Mutable<Extract<LlmMessage, { role: "assistant" }>> = {
        role: "assistant",
        text: record.text,
      };
      if (record.reasoning) message.reasoning = record.reasoning;
      if (record.toolCalls) message.toolCalls = record.toolCalls;
      if (record.providerState !== undefined) message.providerState = record.providerState;
      if (record.provider !== undefined) message.provider = record.provider;
      state.history.push(message);
      for (const call of record.toolCalls ?? []) state.pendingCalls.set(call.id, call.name);
      break;
    }
    case "tool_result": {
      state.pendingCalls.delete(record.toolCallId);
      const parts = storedToolParts(record);
      const message: Mutable<Extract<LlmMessage, { role: "tool" }>> = {
        role: "tool",
        toolCallId: record.toolCallId,
        name: record.name,
        content: record.content,
        isError: record.isError,
      };
      if (parts) message.parts = parts;
      state.history.push(message);
      break;
    }
    case "permission":
      // An answer to a question an ask rule made is not remembered (nor a rule's own decision).
      if (
        record.rule === undefined &&
        (record.answer === "allow_always" || record.answer === "reject_always")
      ) {
        state.grants.set(record.tool, record.answer);
      }
      break;
    case "config":
      state.selection = {
        model: record.model,
        mode: record.mode as PermissionMode,
        ...(record.effort === undefined ? {} : { effort: record.effort }),
        ...(isSandboxLevel(record.sandbox) ? { sandbox: record.sandbox } : {}),
      };
      break;
    case "title":
      state.title = record.title;
      break;
    case "budgets":
      state.budgets = record.limits;
      break;
    case "compaction":
      applyCompaction(state.history, record);
      break;
    case "clear":
      state.history.length = 0;
      break;
    case "checkpoint":
      (state.checkpoints ??= []).push({ ...record, time: "time" in record ? record.time : "" });
      if (record.kind === "turn") delete state.checkpointCursor;
      break;
    case "files_restored":
      state.checkpointCursor = record.checkpointId;
      // The model was told: it is again.
      state.history.push({ role: "user", content: [{ type: "text", text: record.text }] });
      break;
    case "usage":
      if (record.cost !== undefined) state.cost = record.cost;
      state.tokens += record.usage.input + record.usage.output;
      break;
    default:
      break;
  }
}

/**
 * Closes an interrupted turn: a failed result for every call without one (added to the history
 * too) and a `turn_end` with `interrupted`.
 */
function repairOf(state: RestoreState): StoredEvent[] {
  const repair: StoredEvent[] = [];
  for (const [toolCallId, name] of state.pendingCalls) {
    repair.push({
      type: "tool_result",
      toolCallId,
      name,
      content: INTERRUPTED_TOOL_RESULT,
      isError: true,
    });
    state.history.push({
      role: "tool",
      toolCallId,
      name,
      content: INTERRUPTED_TOOL_RESULT,
      isError: true,
    });
  }
  if (state.open || repair.length > 0) repair.push({ type: "turn_end", stopReason: "interrupted" });
  return repair;
}
