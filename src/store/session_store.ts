/**
 * The session store contract: an append-only event log per session plus a listing, stated in
 * terms of order and durability; and the attachment store contract.
 *
 * @module
 */
import type { RecordedStopReason } from "../util/stop_reason.ts";
import type { LlmUsage } from "../llm/provider.ts";
import type { WorktreeInfo } from "../git/worktree.ts";

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
  /** Set on a session made by `session/fork`: the session it copies. */
  readonly forkedFrom?: SessionForkSource;
  /** The session that started this one (a `delegate` call's agent session), when one did. */
  readonly parent?: SessionParent;
  /**
   * The git worktree the session works in (`--worktrees`), on the disk of the server that made
   * it; `cwd` stays the directory the client named.
   */
  readonly worktree?: WorktreeInfo;
  /**
   * The tenant that owns the session (`serve --http --tenants`): set at creation, never changed;
   * `list` filters by it ({@link ListOptions.tenant}). Absent: a session of no tenant, which a
   * tenant never sees.
   */
  readonly tenant?: string;
}

/** Where a forked session came from: see {@link SessionHeader.forkedFrom}. */
export interface SessionForkSource {
  /** The source session's id. */
  readonly sessionId: string;
  /** The seq of the source's last record copied (0: none). */
  readonly seq: number;
}

/**
 * Where a session came from: the session and the tool call (a `delegate` call) that started it.
 * Set at creation, never changed; `list` hides such a session unless asked, `delete` of the
 * parent deletes it.
 */
export interface SessionParent {
  /** The parent session's id (it may be stored elsewhere: another agent's store). */
  readonly sessionId: string;
  /** The parent's tool call that started this session. */
  readonly toolCallId: string;
}

/** The most characters of each field of a {@link SessionParent}. */
export const PARENT_FIELD_MAX_LENGTH: number = 256;

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
    /** Set when the call was refused permission: why, and the rule that refused it. */
    readonly denied?: { readonly reason: string; readonly rule?: string };
  }
  | {
    readonly type: "permission";
    readonly toolCallId: string;
    readonly tool: string;
    readonly answer: string;
    /** What the permission rule that decided does (allow, deny, ask); absent: no rule did. */
    readonly decision?: string;
    /** That rule as written. */
    readonly rule?: string;
  }
  /**
   * A question a running tool call put to the user (`elicitation/create`) and the answer: never
   * replayed (the client showed it as a dialog, not an update), kept for the record.
   */
  | {
    readonly type: "elicitation";
    readonly toolCallId: string;
    /** The asking tool (`ask_user`, `mcp__<server>__<tool>`). */
    readonly tool: string;
    /** `form` or `url`. */
    readonly mode: string;
    /** What the user was told (at most 4,000 characters). */
    readonly message: string;
    /** For a URL question, the URL (its user, password and credential-like parameters redacted). */
    readonly url?: string;
    /** `accept`, `decline` or `cancel`. */
    readonly action: string;
    /** An accepted form's content, when it was at most 16 KiB as JSON. */
    readonly content?: Readonly<Record<string, unknown>>;
    /** Set when the content was larger and left out. */
    readonly contentLeftOut?: true;
  }
  | {
    readonly type: "config";
    readonly model: string;
    readonly mode: string;
    readonly effort?: string;
    /** The session's command sandbox level, when it chose one. */
    readonly sandbox?: string;
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
  /** The session's own budgets (a client's lower limits; times in ms): the latest holds. */
  | {
    readonly type: "budgets";
    readonly limits: {
      readonly maxSteps?: number | undefined;
      readonly maxToolCalls?: number | undefined;
      readonly turnTimeoutMs?: number | undefined;
      readonly maxSessionTokens?: number | undefined;
      readonly maxSessionCostUsd?: number | undefined;
    };
  }
  /**
   * The conversation was compacted: the first `replaced` messages became one summary (none when
   * only tool results were pruned), then the results of the tool calls in `pruned` were cut to a
   * note. Applied in order on restore, so a restarted session continues from the same history.
   */
  | {
    readonly type: "compaction";
    readonly compactionId: string;
    /** What set it off: the threshold, the provider's context error, or `/compact`. */
    readonly reason: "threshold" | "overflow" | "command";
    readonly replaced: number;
    readonly summary?: string;
    readonly pruned?: readonly string[];
    /** Estimated tokens in context before and after. */
    readonly tokensBefore: number;
    readonly tokensAfter: number;
  }
  /** `/clear`: the model starts afresh (the log keeps what came before, for the client). */
  | { readonly type: "clear" }
  /** A built-in slash command as the user typed it (replayed on load; never sent to the model). */
  | { readonly type: "command"; readonly messageId: string; readonly text: string }
  /** Agent text for the user only, such as a command's answer (replayed; never sent to the model). */
  | { readonly type: "note"; readonly messageId: string; readonly text: string }
  /**
   * The files of the session's roots at a point in time (kept in its checkpoint store, see
   * src/git/checkpoint_store.ts): `turn` before a turn's first change, `restore` before `/undo`
   * or `/restore` changed them.
   */
  | {
    readonly type: "checkpoint";
    readonly checkpointId: string;
    readonly kind: "turn" | "restore";
    /** The turn's prompt, abridged; for `restore`, the command. */
    readonly prompt: string;
    readonly roots: readonly StoredCheckpointRoot[];
    /**
     * The session whose checkpoint store holds the files (a fork's copied checkpoints name their
     * source); absent in older logs: the session's own.
     */
    readonly store?: string;
  }
  /**
   * `/undo` or `/restore` brought the files back to checkpoint `number`: the model is told
   * `text` (a user message in its conversation), so it does not count on its later edits.
   */
  | {
    readonly type: "files_restored";
    readonly checkpointId: string;
    readonly number: number;
    readonly text: string;
  }
  /** The model's whole plan after an `update_plan` call. */
  | {
    readonly type: "plan";
    readonly entries: ReadonlyArray<
      { readonly content: string; readonly status: string; readonly priority: string }
    >;
  }
  | {
    readonly type: "turn_end";
    readonly stopReason: RecordedStopReason;
    readonly error?: string;
  };

/** One root in a `checkpoint` event: its git tree, and what was left out. */
export interface StoredCheckpointRoot {
  /** The root (canonical). */
  readonly root: string;
  /** Absent when the root had too many files to record. */
  readonly tree?: string;
  /** Files over the size limit, relative to the root. */
  readonly large?: readonly string[];
  /** The root's file count, when it was over the limit. */
  readonly tooMany?: number;
}

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

/**
 * A session read a batch of records at a time: see {@link SessionStore.loadStream}.
 */
export interface SessionRecordStream {
  /** The log's first record. */
  readonly header: SessionHeader;
  /**
   * The events after the header, in order, in batches as they are read; iterate it once. It
   * throws what `load` would have rejected with (a `CorruptSessionLogError` from the JSONL
   * store) when it reaches the bad record, after the batches before it.
   */
  readonly batches: AsyncIterable<readonly StoredRecord[]>;
  /** Stops reading: needed when `batches` is not read to its end; idempotent. */
  close(): Promise<void>;
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
  /** The session that started this one, as its header says. */
  readonly parent?: SessionParent;
  /** The tenant that owns the session, as its header says. */
  readonly tenant?: string;
}

/** A session a store holds but cannot read back: see {@link SessionStore.unreadable}. */
export interface UnreadableSession {
  /** Session id. */
  readonly id: string;
  /** Why it cannot be read (`line 5 is not valid JSON`). */
  readonly reason: string;
}

/** Options of the store calls that may take a while: an abort signal. */
export interface StoreCallOptions {
  /**
   * Aborts the call: a call whose signal is already aborted rejects with `signal.reason` before
   * doing anything; one aborted while it runs rejects with the reason at its next step boundary,
   * leaving the store consistent (a step already started completes: see each method).
   */
  readonly signal?: AbortSignal;
}

/** Options for {@link SessionStore.create}. */
export interface CreateOptions extends StoreCallOptions {
  /**
   * The session's first events, stored with its header as records `{...event, seq, time}` (seq
   * from 1, one time), as an `append` right after the creation would store them, in the same
   * write where the store can (the JSONL store: in the log's exclusive create).
   * @default {[]}
   */
  readonly events?: readonly StoredEvent[];
}

/** Options for {@link SessionStore.list}. */
export interface ListOptions extends StoreCallOptions {
  /** Absolute canonical cwd to match exactly. */
  readonly cwd?: string;
  /** Opaque cursor from a previous page. */
  readonly cursor?: string;
  /** Most sessions per page. */
  readonly limit: number;
  /**
   * Lineage filter: `null` lists only the sessions without a parent (what `session/list` shows by
   * default), a session id only the sessions whose parent it is (its children, not theirs);
   * absent lists every session. Filtered before paging, so pages stay full and cursors exact.
   */
  readonly parent?: string | null;
  /**
   * Tenant filter: only the sessions whose header names this tenant; absent lists the sessions of
   * every tenant and of none. Filtered before paging (the PostgreSQL store in SQL), so pages stay
   * full and a cursor never leads to another tenant's sessions.
   */
  readonly tenant?: string;
}

/** Options for {@link SessionStore.delete}. */
export interface DeleteOptions extends StoreCallOptions {
  /**
   * Only the descendants of this tenant go with the session (a session of another tenant that
   * names it as its parent stays, its parent gone, as one whose parent is stored elsewhere);
   * absent: every descendant.
   */
  readonly tenant?: string;
}

/** Options for {@link SessionStore.append}. */
export interface AppendOptions {
  /** A commit point: the promise resolves only once the events are durable (see the contract). */
  readonly sync: boolean;
}

/** A page of sessions, newest creation first (ties by id). */
export interface SessionPage {
  /** The sessions of this page. */
  readonly sessions: readonly SessionSummary[];
  /** Absent on the last page. */
  readonly nextCursor?: string;
}

/** Exclusive ownership of a session; see {@link SessionStore.acquire}. */
export interface SessionLease {
  /** Gives up ownership of the session (idempotent), after the owner's appends are written. */
  release(): Promise<void>;
}

/**
 * Where sessions live: per session, a header and an append-only sequence of events; across
 * sessions, a listing.
 *
 * ## Contract
 *
 * Every store meets these, whatever it keeps its data in (files, a database, memory); the suite
 * in `tests/store/_session_store_contract.ts` checks them.
 *
 * - **Asynchronous, honest failures.** Every method reports failure only through its returned
 *   promise; none throws synchronously.
 * - **Order.** The events appended for one session are read back (`load`) in the call order of
 *   the `append`s, numbered `seq` 1, 2, … without gaps, each with the `time` of its append. An
 *   `append`'s events are in place for a `load` called after `append` returned, even before its
 *   promise settles; `list` reflects them once the promise resolved.
 * - **Durability** (a store that keeps data beyond the process; `MemorySessionStore` keeps
 *   nothing beyond it and ignores `sync`, but meets every other clause):
 *   - once an `append` with `sync` resolves, its events, the session itself and every event
 *     appended to it before, survive a crash of the process and of the machine (power loss);
 *     an `append` of no events with `sync` is a commit point too;
 *   - without `sync`, once `append` has returned (not only resolved) its events survive a crash
 *     of this process (`SIGKILL`), but maybe not of the machine; this holds for a session this
 *     store object created or loaded under its lease with no other call on it pending (the
 *     session layer's case); otherwise only once the promise resolves;
 *   - once `create` resolves, the session survives a crash of this process (`SIGKILL`); it
 *     survives a crash of the machine once an `append` with `sync` to it resolves (a store may
 *     make it durable sooner: the JSONL store does within its group-commit window, PostgreSQL
 *     when `create` resolves). A session is listed by this store object once `create` resolves.
 * - **Acknowledgements.** What a caller tells the world (a prompt's answer, a tool that runs)
 *   waits until the events before it are *written*: {@link written} settles, or, for a store
 *   without it, every earlier `append`'s promise resolved. Written means: the JSONL store, in the
 *   operating system's hands (survives `SIGKILL` of this process, at once in the session layer's
 *   case); PostgreSQL, committed (synced for a commit point: survives a crash of the database
 *   server); memory, at once.
 * - **Failed appends.** A rejected `append` may have stored a prefix of its events (never any
 *   event out of order), and never leaves a hole that later events close up: a store retries a
 *   failed write in place, or the failure poisons the session for this store object, and every
 *   later `append` to it rejects (`SessionLogFailedError`) until the session is loaded
 *   again (`load`, `loadStream`) or its lease taken again. The session stays readable, as stored.
 * - **Ownership.** Only the holder of a session's lease (`acquire`) appends to it; a store may
 *   serve several processes (JSONL) or one (memory), and a lease excludes every other holder it
 *   can see: another process, or another `acquire` on the same store.
 * - **Listing.** See {@link list}: an order fixed at creation, and cursors that stay exact while
 *   sessions are updated, created and deleted between pages. A store may leave out a session it
 *   holds but cannot read (the JSONL store does, for a log it cannot parse); then
 *   {@link unreadable} names it, and it is listed again once readable.
 * - **Lineage.** A header's `parent` is listed with the session (`SessionSummary.parent`) and
 *   filters the listing (`ListOptions.parent`); `delete` removes a session with its descendants.
 * - **Attachments.** A session's `user` events reference images by sha256 in an
 *   {@link AttachmentStore}. `delete` hands the attachment store the references that no other
 *   stored session holds any more ({@link AttachmentStore.release}).
 * - **Cancellation.** The calls that take a {@link StoreCallOptions.signal} honour it before they
 *   start and between their steps, and reject with `signal.reason`.
 */
export interface SessionStore {
  /** How messages name the kind of store ("JSONL", "PostgreSQL", "memory"). */
  readonly name?: string;
  /**
   * Optional: settles (never rejects) once every `append` to the session this store object was
   * given so far is written (see the contract: acknowledgements); a failure shows in its
   * `append`'s promise. `undefined` when the store cannot tell: the caller waits for the appends'
   * promises instead. Cheap: usually an already settled promise (JSONL, memory).
   *
   * @param id The session
   * @returns The promise, or `undefined`
   */
  written?(id: string): Promise<void> | undefined;
  /**
   * Stores a new session with its header and `options.events` (none by default), as if they
   * were appended right after it: it survives a crash of this process when this resolves, and of
   * the machine by the time its first `append` with `sync` resolves.
   *
   * @param header The session's header; `createdAt` fixes its place in {@link list}
   * @param options The session's first events, and an abort signal, honoured until the session
   *   is written
   * @returns Resolves once the session is stored
   * @throws {SessionExistsError} The id is already stored (rejects)
   * @throws {InvalidSessionIdError} An id a store cannot keep (rejects)
   */
  create(header: SessionHeader, options?: CreateOptions): Promise<void>;
  /**
   * Appends events to a session, in call order (see the contract: order and durability).
   * Never throws: every failure, such as an unknown session, rejects the returned promise, which
   * the caller must handle.
   *
   * @param id The session (the caller holds its lease)
   * @param events The events, in order
   * @param options `sync`: a commit point, durable when the promise resolves
   * @returns Resolves once the events are stored (with `sync`, durably)
   * @throws {SessionNotFoundError} The session is not stored (rejects)
   * @throws {SessionLogFailedError} An earlier append of the session failed, and it was not
   *   loaded again since (rejects)
   */
  append(id: string, events: readonly StoredEvent[], options: AppendOptions): Promise<void>;
  /**
   * Whether a session with this id is stored.
   *
   * @param id The session
   * @returns `false` for a malformed id too
   */
  exists(id: string): Promise<boolean>;
  /**
   * Reads a session: its header and events in order.
   *
   * @param id The session
   * @param options An abort signal, honoured before the read
   * @returns The session, or `undefined` when none is stored under this id
   * @throws {CorruptSessionLogError} Stored data that cannot be read back (rejects)
   */
  load(id: string, options?: StoreCallOptions): Promise<LoadedSession | undefined>;
  /**
   * Optional: reads a session like {@link load}, a batch of records at a time, so that a caller
   * can act on the first records before the last are read (a `session/load` replay). Everything
   * `load` does happens too (a JSONL store cuts a torn tail under the lease once the last batch
   * is read). A store without it is read with `load` instead (see `loadRecordStream`).
   *
   * @param id The session
   * @param options An abort signal, honoured before the read and between batches
   * @returns The header and the batches to come, or `undefined` when no session is stored under
   *   this id; the caller reads the batches to their end or closes the stream
   * @throws {CorruptSessionLogError} A bad header (rejects); a bad record later throws from the
   *   batches
   */
  loadStream?(id: string, options?: StoreCallOptions): Promise<SessionRecordStream | undefined>;
  /**
   * Lists sessions, newest creation first (ties by id), a page at a time. The order never changes
   * while a session lives, so a client paging with the cursors sees every session that existed
   * when it read the first page exactly once (unless deleted before its page is read), however
   * sessions are updated meanwhile; sessions created after the first page are not on later pages.
   *
   * @param options Exact `cwd` filter, lineage filter (`parent`), the previous page's
   *   `nextCursor`, page size, signal
   * @returns The page; `nextCursor` only when more sessions follow
   * @throws {InvalidCursorError} A cursor this store did not issue (rejects)
   * @throws {RangeError} A limit that is not a positive integer (rejects)
   */
  list(options: ListOptions): Promise<SessionPage>;
  /**
   * Optional: the sessions this store holds but cannot read back and leaves out of {@link list},
   * in id order (a store that lists every session it holds leaves the method out, or reports
   * none). Each call looks again, and a session that has become readable is listed from then on:
   * the JSONL store reads every log its index does not list (a log it could not read before, one
   * no index line names). `copy-sessions` copies the others, names these and fails. A listed
   * session whose `load` rejects with `CorruptSessionLogError` is not among them.
   *
   * @param options An abort signal, honoured before each step
   * @returns The unreadable sessions and why
   */
  unreadable?(options?: StoreCallOptions): Promise<readonly UnreadableSession[]>;
  /**
   * Removes a session and its descendants: the sessions whose header names it as `parent`, theirs,
   * and so on (taking each one's lease for the time, or using the caller's: the leases are
   * released when done), then releases the attachments no other stored session references.
   * Every lease is taken before anything is removed, so when one is held elsewhere nothing is;
   * descendants go first, the session last, so an interrupted delete leaves no session whose
   * parent is gone and is finished by calling it again. Unknown ids are fine. The signal is
   * honoured until the removal starts.
   *
   * @param id The session
   * @param options An abort signal; a tenant whose descendants only go with it
   * @returns Resolves once the session and its descendants are gone
   * @throws {SessionLockedError} Another holder has the lease of the session or of a
   *   descendant (rejects; nothing removed)
   */
  delete(id: string, options?: DeleteOptions): Promise<void>;
  /**
   * Takes exclusive ownership of a session, whether or not it is stored yet.
   *
   * @param id The session
   * @param options An abort signal; a lease taken when it fires is given back
   * @returns The lease
   * @throws {SessionLockedError} Another live holder has it, or this store already (rejects)
   */
  acquire(id: string, options?: StoreCallOptions): Promise<SessionLease>;
}

/**
 * Image bytes addressed by their sha256, shared by sessions: the session store tracks which
 * sessions reference which bytes and tells this store, through {@link release}, when none does
 * any more.
 *
 * ## Contract
 *
 * - `put` is idempotent: the same bytes always get the same address, and are stored once. Once
 *   it resolves, the bytes are durable (for a store that keeps data beyond the process).
 * - `get` returns exactly the bytes that were put (verified), or `undefined`: never other bytes.
 * - `release` removes bytes that no session references any more. A `put` of the same bytes that
 *   races a `release` may find them removed afterwards; readers treat a missing attachment as a
 *   marker, never a failure.
 * - Every method reports failure only through its returned promise.
 */
export interface AttachmentStore {
  /**
   * Stores bytes once.
   *
   * @param bytes The content
   * @param mimeType Its media type (the caller records it with the reference)
   * @param options An abort signal, honoured before the write
   * @returns Their lowercase hex sha256, the address
   */
  put(bytes: Uint8Array, mimeType: string, options?: StoreCallOptions): Promise<string>;
  /**
   * Reads bytes back.
   *
   * @param sha256 An address from {@link put}
   * @param options An abort signal, honoured before the read
   * @returns The bytes, verified against the hash; `undefined` when missing or corrupt
   */
  get(sha256: string, options?: StoreCallOptions): Promise<Uint8Array | undefined>;
  /**
   * Removes attachments that no stored session references any more (called by the session
   * store's `delete`). Unknown or malformed addresses are fine.
   *
   * @param sha256s The addresses
   * @returns Resolves once they are gone
   */
  release(sha256s: readonly string[]): Promise<void>;
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
