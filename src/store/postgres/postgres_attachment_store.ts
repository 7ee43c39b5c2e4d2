/**
 * The {@link AttachmentStore} on PostgreSQL: image bytes in `acp_harness.attachments` by their
 * sha256, verified against it on every read.
 *
 * @module
 */
import type postgres from "postgres";
import { type Logger, nullLogger } from "../../log/logger.ts";
import { SHA256_HEX, sha256Hex } from "../_common.ts";
import type { AttachmentStore, StoreCallOptions } from "../session_store.ts";

/** Options for {@link PostgresAttachmentStore}. */
export interface PostgresAttachmentStoreOptions {
  /** The connection pool (migrated: see `schema.ts`). */
  readonly sql: postgres.Sql;
  /**
   * Where corrupt attachments are reported.
   * @default {nullLogger}
   */
  readonly logger?: Logger;
}

/**
 * Attachment bytes in PostgreSQL, stored once per sha256 and checked against it when read.
 * `release` removes only the bytes that no stored session references at that moment (the session
 * references live in the same database), so a session created meanwhile keeps its images.
 *
 * @example Storing and reading an image
 * ```ts ignore
 * import { openPostgresStore } from "./postgres_store.ts";
 * await using pg = await openPostgresStore({ url, logger });
 * const sha256 = await pg.attachments.put(pngBytes, "image/png");
 * const bytes = await pg.attachments.get(sha256); // undefined when missing or corrupt
 * ```
 */
export class PostgresAttachmentStore implements AttachmentStore {
  readonly #sql: postgres.Sql;
  readonly #logger: Logger;

  /**
   * Creates it on a migrated database.
   *
   * @param options The pool and the logger
   */
  constructor(options: PostgresAttachmentStoreOptions) {
    this.#sql = options.sql;
    this.#logger = options.logger ?? nullLogger;
  }

  /**
   * Stores `bytes` unless they are already there (a corrupt copy is replaced). Durable when it
   * resolves (a committed transaction).
   *
   * @param bytes The content
   * @param mimeType Its media type
   * @param options An abort signal, honoured before the write
   * @returns The lowercase hex sha256 of `bytes`
   * @throws {TypeError} A malformed media type
   */
  async put(bytes: Uint8Array, mimeType: string, options?: StoreCallOptions): Promise<string> {
    options?.signal?.throwIfAborted();
    if (typeof mimeType !== "string" || !/^[\w.+-]+\/[\w.+-]+$/.test(mimeType)) {
      throw new TypeError(`Cannot store attachment: bad media type ${JSON.stringify(mimeType)}`);
    }
    const copy = bytes.slice();
    const sha256 = await sha256Hex(copy);
    options?.signal?.throwIfAborted();
    // The existing row stays unless its bytes no longer match their hash.
    await this.#sql`
      INSERT INTO acp_harness.attachments (sha256, mime_type, bytes)
      VALUES (${sha256}, ${mimeType}, ${copy})
      ON CONFLICT (sha256) DO UPDATE SET bytes = excluded.bytes, mime_type = excluded.mime_type
      WHERE sha256(acp_harness.attachments.bytes) <> sha256(excluded.bytes)`;
    return sha256;
  }

  /**
   * Reads an attachment and checks its hash.
   *
   * @param sha256 An address from {@link put}
   * @param options An abort signal, honoured before the read
   * @returns The bytes, or `undefined` when the address is malformed, nothing is stored under it,
   *   or the stored bytes no longer match it (logged as a warning)
   */
  async get(sha256: string, options?: StoreCallOptions): Promise<Uint8Array | undefined> {
    options?.signal?.throwIfAborted();
    if (typeof sha256 !== "string" || !SHA256_HEX.test(sha256)) return undefined;
    const [row] = await this.#sql<{ bytes: Uint8Array }[]>`
      SELECT bytes FROM acp_harness.attachments WHERE sha256 = ${sha256}`;
    if (row === undefined) return undefined;
    const bytes = new Uint8Array(row.bytes);
    if (await sha256Hex(bytes) !== sha256) {
      this.#logger.warn("attachment is corrupt: its content does not match its sha256", {
        sha256,
      });
      return undefined;
    }
    return bytes;
  }

  /**
   * Removes the attachments among `sha256s` that no stored session references; unknown or
   * malformed addresses are fine.
   *
   * @param sha256s Addresses from {@link put}
   */
  async release(sha256s: readonly string[]): Promise<void> {
    const valid = [...new Set(sha256s)].filter((sha) =>
      typeof sha === "string" && SHA256_HEX.test(sha)
    );
    if (valid.length === 0) return;
    await this.#sql`
      DELETE FROM acp_harness.attachments a
      WHERE a.sha256 = ANY(${valid}::text[])
        AND NOT EXISTS (
          SELECT 1 FROM acp_harness.session_attachments r WHERE r.sha256 = a.sha256
        )`;
  }
}
