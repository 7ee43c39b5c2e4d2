/**
 * The session store contract: an append-only event log per session plus an index for listing.
 *
 * @module
 */
import type { LlmUsage } from "../llm/provider.ts";

/** The first record of a session log. */
export interface SessionHeader {
  /** Log format version. */
  readonly version: 1;
  /** Session id. */
  readonly id: string;
  /** Absolute canonical working directory. */
  readonly cwd: string;
  /** Absolute canonical directories beyond `cwd` that the session may use. */
  readonly additionalDirectories: readonly string[];
  /** ISO 8601. */
  readonly createdAt: string;
}

/** A user message part as stored: images are references to the attachment store. */
export type StoredContentPart =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly mimeType: string; readonly sha256: string };

/** One event of a session's history. */
export type StoredEvent =
  | { readonly type: "turn_start" }
  | {
    readonly type: "user";
    readonly messageId: string;
    readonly content: readonly StoredContentPart[];
  }
  | {
    readonly type: "assistant";
    readonly messageId?: string;
    readonly thoughtId?: string;
    readonly text: string;
    readonly reasoning?: string;
    readonly toolCalls?: ReadonlyArray<
      { readonly id: string; readonly name: string; readonly arguments: string }
    >;
    readonly providerState?: unknown;
    readonly provider?: string;
  }
  | {
    readonly type: "tool_call";
    readonly toolCallId: string;
    readonly name: string;
    readonly title: string;
    readonly kind: string;
    readonly rawInput: unknown;
    readonly locations: ReadonlyArray<{ readonly path: string; readonly line?: number }>;
  }
  | {
    readonly type: "tool_result";
    readonly toolCallId: string;
    readonly name: string;
    /** The text the model saw. */
    readonly content: string;
    readonly isError: boolean;
    /** What the client was shown (ToolDisplay values). */
    readonly display?: readonly unknown[];
    readonly locations?: ReadonlyArray<{ readonly path: string; readonly line?: number }>;
  }
  | {
    readonly type: "permission";
    readonly toolCallId: string;
    readonly tool: string;
    readonly answer: string;
  }
  | {
    readonly type: "config";
    readonly model: string;
    readonly mode: string;
    readonly effort?: string;
  }
  | {
    readonly type: "usage";
    readonly usage: LlmUsage;
    readonly used: number;
    readonly size?: number;
    /** Cumulative session cost in USD, when known. */
    readonly cost?: number;
  }
  | { readonly type: "title"; readonly title: string }
  | {
    readonly type: "turn_end";
    readonly stopReason:
      | "end_turn"
      | "max_tokens"
      | "max_turn_requests"
      | "refusal"
      | "cancelled"
      | "interrupted"
      | "error";
    readonly error?: string;
  };

/** An event as recorded: with its sequence number (1, 2, … after the header) and time. */
export type StoredRecord = StoredEvent & {
  readonly seq: number;
  /** ISO 8601. */
  readonly time: string;
};

/** A loaded session log. */
export interface LoadedSession {
  /** The log's first record. */
  readonly header: SessionHeader;
  /** The events after the header, in order. */
  readonly records: readonly StoredRecord[];
}

/** One entry of `session/list`. */
export interface SessionSummary {
  /** Session id. */
  readonly id: string;
  /** Absolute canonical working directory. */
  readonly cwd: string;
  /** Absolute canonical directories beyond `cwd`. */
  readonly additionalDirectories: readonly string[];
  /** Session title, once one is set. */
  readonly title?: string;
  /** ISO 8601 time of the last event. */
  readonly updatedAt: string;
}

/** Options for {@link SessionStore.list}. */
export interface ListOptions {
  /** Absolute canonical cwd to match exactly. */
  readonly cwd?: string;
  /** Opaque cursor from a previous page. */
  readonly cursor?: string;
  /** Most sessions per page. */
  readonly limit: number;
}

/** A page of sessions, newest creation first (ties by id). */
export interface SessionPage {
  /** The sessions of this page. */
  readonly sessions: readonly SessionSummary[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

/** Exclusive ownership of a session by this process; released on close. */
export interface SessionLease {
  /** Gives up ownership of the session. */
  release(): Promise<void>;
}

/** Where sessions live. */
export interface SessionStore {
  /** Writes a new log with its header (durably). */
  create(header: SessionHeader): Promise<void>;
  /**
   * Appends events to a session's log in order. The events are handed to the operating system
   * before this returns (so a crash of this process cannot lose them, and order follows call
   * order); the promise resolves once they are on disk when `sync` is set (a commit point), at
   * once otherwise. Rejects (or throws) when the log cannot be written.
   */
  append(
    id: string,
    events: readonly StoredEvent[],
    options: { readonly sync: boolean },
  ): Promise<void>;
  /** Whether a session with this id is stored. */
  exists(id: string): Promise<boolean>;
  /** Reads a session's log; `undefined` when there is none. A torn final line is ignored. */
  load(id: string): Promise<LoadedSession | undefined>;
  /**
   * Lists sessions, newest creation first (ties by id), a page at a time. The order never changes
   * while a session lives, so a client paging with the cursors sees every session that existed
   * when it read the first page exactly once (unless deleted before its page is read), however
   * sessions are updated meanwhile; sessions created after the first page are not on later pages.
   */
  list(options: ListOptions): Promise<SessionPage>;
  /** Removes the log, the index entry and attachments no other session uses. Unknown ids are fine. */
  delete(id: string): Promise<void>;
  /** Takes exclusive ownership; rejects with {@link SessionLockedError} when another live process has it. */
  acquire(id: string): Promise<SessionLease>;
}

/** Image bytes addressed by their sha256. */
export interface AttachmentStore {
  /** Stores bytes once; resolves with their sha256 (hex). */
  put(bytes: Uint8Array, mimeType: string): Promise<string>;
  /** The bytes, verified against the hash; `undefined` when missing or corrupt. */
  get(sha256: string): Promise<Uint8Array | undefined>;
}

/** The session is open in another process (or already open here). */
export class SessionLockedError extends Error {
  /**
   * Creates the error.
   *
   * @param message Names the session and the process holding it
   */
  constructor(message: string) {
    super(message);
    this.name = "SessionLockedError";
  }
}

/** A cursor that this store did not issue. */
export class InvalidCursorError extends TypeError {
  /**
   * Creates the error.
   *
   * @param message Says what is wrong with it
   */
  constructor(message: string) {
    super(message);
    this.name = "InvalidCursorError";
  }
}
