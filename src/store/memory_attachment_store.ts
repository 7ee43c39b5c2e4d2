/**
 * The {@link AttachmentStore} in memory, for tests and embedding without a disk.
 *
 * @module
 */
import { SHA256_HEX, sha256Hex } from "./_common.ts";
import type { AttachmentStore, StoreCallOptions } from "./session_store.ts";

/**
 * Attachment bytes in memory, by their sha256; nothing survives a restart.
 *
 * @example Storing and reading an image
 * ```ts
 * import assert from "node:assert/strict";
 * import { MemoryAttachmentStore } from "./memory_attachment_store.ts";
 * const attachments = new MemoryAttachmentStore();
 * const sha256 = await attachments.put(new Uint8Array([1, 2, 3]), "image/png");
 * assert.deepEqual(await attachments.get(sha256), new Uint8Array([1, 2, 3]));
 * await attachments.release([sha256]);
 * assert.equal(await attachments.get(sha256), undefined);
 * ```
 */
export class MemoryAttachmentStore implements AttachmentStore {
  readonly #bytes = new Map<string, Uint8Array>();

  /** How many attachments are stored. */
  get size(): number {
    return this.#bytes.size;
  }

  /**
   * Stores a copy of `bytes` unless they are already there.
   *
   * @param bytes The content
   * @param mimeType Its media type (checked, not kept: the caller records it with the reference)
   * @param options An abort signal, honoured before anything is stored
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
    if (!this.#bytes.has(sha256)) this.#bytes.set(sha256, copy);
    return sha256;
  }

  /**
   * A copy of the stored bytes.
   *
   * @param sha256 An address from {@link put}
   * @param options An abort signal, honoured first
   * @returns The bytes, or `undefined` when there are none under this address
   */
  get(sha256: string, options?: StoreCallOptions): Promise<Uint8Array | undefined> {
    try {
      options?.signal?.throwIfAborted();
    } catch (error) {
      return Promise.reject(error);
    }
    if (!SHA256_HEX.test(sha256)) return Promise.resolve(undefined);
    return Promise.resolve(this.#bytes.get(sha256)?.slice());
  }

  /**
   * Forgets attachments; unknown or malformed addresses are fine.
   *
   * @param sha256s Addresses from {@link put}
   */
  release(sha256s: readonly string[]): Promise<void> {
    for (const sha256 of sha256s) this.#bytes.delete(sha256);
    return Promise.resolve();
  }
}
