/**
 * Content-addressed attachment bytes (images): `<dir>/<aa>/<sha256>`, where `aa` is the first two
 * hex digits of the sha256. Each file is written once (temp file, fsync, rename) and verified on
 * every read.
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import { type Logger, nullLogger } from "../log/logger.ts";
import { readIfExists, SHA256_HEX, sha256Hex } from "./_common.ts";
import type { AttachmentStore, StoreCallOptions } from "./session_store.ts";

/** Options for {@link FileAttachmentStore}. */
export interface FileAttachmentStoreOptions {
  readonly host: Host;
  /** The directory holding the attachments (created on the first `put`). */
  readonly dir: string;
  /**
   * Where corrupt attachments are reported.
   * @default {nullLogger}
   */
  readonly logger?: Logger;
}

/**
 * The {@link AttachmentStore} on files: bytes stored by their sha256, verified on read.
 *
 * @example Storing and reading an image
 * ```ts ignore
 * import { NodeHost } from "../host/node_host.ts";
 * import { FileAttachmentStore } from "./attachment_store.ts";
 * const store = new FileAttachmentStore({ host: new NodeHost(), dir: "/tmp/attachments" });
 * const sha256 = await store.put(pngBytes, "image/png");
 * const bytes = await store.get(sha256); // undefined when missing or corrupt
 * ```
 */
export class FileAttachmentStore implements AttachmentStore {
  readonly #host: Host;
  readonly #dir: string;
  readonly #logger: Logger;

  /**
   * Creates a store in `options.dir`.
   *
   * @param options Host, directory and logger
   */
  constructor(options: FileAttachmentStoreOptions) {
    this.#host = options.host;
    this.#dir = options.dir.replace(/\/+$/, "") || "/";
    this.#logger = options.logger ?? nullLogger;
  }

  /**
   * Stores `bytes` durably unless an intact copy is already there (a corrupt copy is replaced).
   *
   * @param bytes The content
   * @param mimeType Its media type; the caller records it with the reference (the address is
   *   the content alone, so the same bytes under two types are stored once)
   * @param options An abort signal, honoured before the write
   * @returns The lowercase hex sha256 of `bytes`, the attachment's address
   */
  async put(bytes: Uint8Array, mimeType: string, options?: StoreCallOptions): Promise<string> {
    options?.signal?.throwIfAborted();
    if (typeof mimeType !== "string" || !/^[\w.+-]+\/[\w.+-]+$/.test(mimeType)) {
      throw new TypeError(`Cannot store attachment: bad media type ${JSON.stringify(mimeType)}`);
    }
    const sha256 = await sha256Hex(bytes);
    const path = this.pathOf(sha256);
    const existing = await this.#host.stat(path);
    if (existing?.isFile && existing.size === bytes.byteLength && await this.get(sha256)) {
      return sha256;
    }
    const dir = path.slice(0, path.lastIndexOf("/"));
    await this.#host.mkdir(dir);
    const temp = `${dir}/.${sha256}.${crypto.randomUUID()}.tmp`;
    try {
      await this.#host.createExclusive(temp, bytes, { sync: true });
      await this.#host.rename(temp, path);
    } catch (error) {
      await this.#host.remove(temp);
      throw error;
    }
    await this.#host.syncDir(dir);
    return sha256;
  }

  /**
   * Reads an attachment and checks its hash.
   *
   * @param sha256 The address from {@link put}
   * @param options An abort signal, honoured before the read
   * @returns The bytes, or `undefined` when the address is malformed, the file is missing, or its
   *   content no longer matches the hash (logged as a warning)
   */
  async get(sha256: string, options?: StoreCallOptions): Promise<Uint8Array | undefined> {
    options?.signal?.throwIfAborted();
    if (!SHA256_HEX.test(sha256)) return undefined;
    const path = this.pathOf(sha256);
    const bytes = await readIfExists(this.#host, path);
    if (bytes === undefined) return undefined;
    if (await sha256Hex(bytes) !== sha256) {
      this.#logger.warn("attachment is corrupt: its content does not match its sha256", { path });
      return undefined;
    }
    return bytes;
  }

  /**
   * Removes attachments no session references any more, one after the other; missing or
   * malformed addresses are fine.
   *
   * @param sha256s Addresses from {@link put}
   */
  async release(sha256s: readonly string[]): Promise<void> {
    for (const sha256 of sha256s) await this.delete(sha256);
  }

  /**
   * Removes an attachment; a missing one is fine.
   *
   * @param sha256 The address from {@link put}
   */
  async delete(sha256: string): Promise<void> {
    if (!SHA256_HEX.test(sha256)) return;
    await this.#host.remove(this.pathOf(sha256));
  }

  /**
   * The file of an attachment.
   *
   * @param sha256 A lowercase hex sha256
   * @returns `<dir>/<first two hex digits>/<sha256>`
   */
  pathOf(sha256: string): string {
    if (!SHA256_HEX.test(sha256)) {
      throw new TypeError(`Cannot locate attachment: ${JSON.stringify(sha256)} is not a sha256`);
    }
    return `${this.#dir}/${sha256.slice(0, 2)}/${sha256}`;
  }
}
