/**
 * Small helpers shared by the store modules.
 *
 * @module
 */
import { abortableDelay } from "../util/abortable_delay.ts";
import {
  PARENT_FIELD_MAX_LENGTH,
  type SessionHeader,
  type SessionParent,
} from "./session_store.ts";
import { InvalidSessionIdError } from "./store_errors.ts";

/** What session ids may look like: UUIDs and similar; never a path separator or a dot. */
const SESSION_ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$/;

/** A lowercase hex sha256. */
export const SHA256_HEX: RegExp = /^[0-9a-f]{64}$/;

/** Whether `id` is safe to use as a file name (see {@link SESSION_ID}). */
export function isValidSessionId(id: unknown): id is string {
  return typeof id === "string" && SESSION_ID.test(id);
}

/** Whether `value` is a {@link SessionParent}: two non-empty strings of bounded length. */
export function isSessionParent(value: unknown): value is SessionParent {
  if (value === null || typeof value !== "object" || Array.isArray(value)) return false;
  const { sessionId, toolCallId } = value as Record<string, unknown>;
  return [sessionId, toolCallId].every((field) =>
    typeof field === "string" && field.length > 0 && field.length <= PARENT_FIELD_MAX_LENGTH
  );
}

/** What tenant names look like: lowercase letters, digits, `_` and `-`, at most 64. */
export const TENANT_NAME: RegExp = /^[a-z0-9][a-z0-9_-]{0,63}$/;

/** A header's tenant, when it has a valid one. */
export function tenantOf(header: SessionHeader): string | undefined {
  const { tenant } = header;
  return typeof tenant === "string" && TENANT_NAME.test(tenant) ? tenant : undefined;
}

/** A header's parent as its own object (the two fields only), when it has a valid one. */
export function parentOf(header: SessionHeader): SessionParent | undefined {
  const { parent } = header;
  return isSessionParent(parent)
    ? { sessionId: parent.sessionId, toolCallId: parent.toolCallId }
    : undefined;
}

/** Whether `value` is an ISO 8601 time exactly as `Date.prototype.toISOString` writes it. */
export function isCanonicalTime(value: unknown): value is string {
  if (typeof value !== "string" || value.length !== 24) return false;
  const ms = Date.parse(value);
  return Number.isFinite(ms) && new Date(ms).toISOString() === value;
}

/** Whether a rejected file operation failed because the path does not exist. */
export function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR" ||
    error instanceof Error && error.name === "NotFound";
}

/**
 * Reads a whole file, or `undefined` when it does not exist.
 *
 * @param files Reads files
 * @param path The file
 * @returns Its bytes, or `undefined`
 */
export async function readIfExists(
  files: { readFile(path: string): Promise<Uint8Array> },
  path: string,
): Promise<Uint8Array | undefined> {
  try {
    return await files.readFile(path);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * A flush shared by its callers (group commit): the first call starts a timer of `delayMs`, every
 * call until it fires gets the same promise, and calls made once the flush has started get the
 * next one (what they wait for may be newer than what it covers).
 *
 * @param delayMs How long the first call waits for others to share the flush
 * @param run The flush
 * @returns Asks for the flush; settles as it does
 */
export function groupFlush(delayMs: number, run: () => Promise<void>): () => Promise<void> {
  let pending: Promise<void> | undefined;
  return () =>
    pending ??= abortableDelay(delayMs).then(() => {
      pending = undefined;
      return run();
    });
}

/** An array of strings. */
export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === "string");
}

/** Lowercase hex of a sha256 digest. */
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(
    await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>),
  );
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}

/** Whether two byte arrays hold the same bytes. */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.byteLength !== b.byteLength) return false;
  for (let i = 0; i < a.byteLength; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** The header's creation time in canonical form (the epoch when it is not a time at all). */
export function creationTime(header: SessionHeader): string {
  return canonicalTime(header.createdAt, new Date(0).toISOString());
}

/** `value` if canonical, else its canonical form, else `fallback`'s. */
export function canonicalTime(value: string, fallback: string): string {
  if (isCanonicalTime(value)) return value;
  const ms = Date.parse(value);
  return new Date(Number.isFinite(ms) ? ms : Date.parse(fallback)).toISOString();
}

/**
 * Checks a header before it is stored.
 *
 * @throws {InvalidSessionIdError} A bad id
 * @throws {TypeError} Another bad field
 */
export function checkHeader(header: SessionHeader): void {
  if (!isValidSessionId(header?.id)) throw new InvalidSessionIdError(String(header?.id));
  if (
    header.version !== 1 || typeof header.cwd !== "string" ||
    !isStringArray(header.additionalDirectories) ||
    !Number.isFinite(Date.parse(header.createdAt))
  ) {
    throw new TypeError(
      `Cannot create session "${header.id}": the header needs version 1, cwd, ` +
        "additionalDirectories and an ISO 8601 createdAt",
    );
  }
  if (header.tenant !== undefined && tenantOf(header) === undefined) {
    throw new TypeError(
      `Cannot create session "${header.id}": tenant must be 1 to 64 lowercase letters, digits, ` +
        `"_" or "-"`,
    );
  }
  if (header.parent !== undefined && !isSessionParent(header.parent)) {
    throw new TypeError(
      `Cannot create session "${header.id}": parent needs a sessionId and a toolCallId of 1 to ` +
        `${PARENT_FIELD_MAX_LENGTH} characters`,
    );
  }
}
