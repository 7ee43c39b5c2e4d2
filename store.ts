/**
 * The session stores of acp-harness: the {@link SessionStore} contract (create, append, load,
 * list, delete, leases) that every store meets, the JSONL store on disk
 * ({@link JsonlSessionStore}, what the command line uses), the in-memory store
 * ({@link MemorySessionStore}: tests, embedding), the attachment stores that keep prompt images,
 * the record types and the errors a store throws. Hand a store to `createAgentServer` (`store`,
 * `attachments`) to choose where sessions are kept.
 *
 * @example Keeping sessions in memory
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemorySessionStore, type SessionStore } from "./store.ts";
 *
 * const store: SessionStore = new MemorySessionStore();
 * const page = await store.list({ limit: 10 });
 * assert.deepEqual(page.sessions, []);
 * ```
 *
 * @module
 */
export type {
  AppendOptions,
  AttachmentStore,
  CreateOptions,
  DeleteOptions,
  ListOptions,
  LoadedSession,
  SessionForkSource,
  SessionHeader,
  SessionLease,
  SessionPage,
  SessionParent,
  SessionRecordStream,
  SessionStore,
  SessionSummary,
  StoreCallOptions,
  StoredCheckpointRoot,
  StoredContentPart,
  StoredEvent,
  StoredRecord,
  UnreadableSession,
} from "./src/store/session_store.ts";
export { InvalidCursorError, SessionLockedError } from "./src/store/session_store.ts";
export { TenantSessionStore } from "./src/store/tenant_session_store.ts";
export type { WorktreeInfo, WorktreeOwner } from "./src/git/worktree.ts";
export {
  InvalidSessionIdError,
  SessionExistsError,
  SessionNotFoundError,
} from "./src/store/store_errors.ts";
export {
  MemorySessionStore,
  type MemorySessionStoreOptions,
} from "./src/store/memory_session_store.ts";
export {
  JsonlSessionStore,
  type JsonlSessionStoreOptions,
} from "./src/store/jsonl_session_store.ts";
export { FileAttachmentStore } from "./src/store/attachment_store.ts";
export { MemoryAttachmentStore } from "./src/store/memory_attachment_store.ts";
export type { RecordedStopReason } from "./src/util/stop_reason.ts";
