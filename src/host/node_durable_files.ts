/**
 * {@link HostDurableFiles} on `node:fs`: the appends, flushes, exclusive creations and
 * truncations that append-only logs and lock files are made of.
 *
 * @module
 */
import type { FileHandle } from "node:fs/promises";
import { fsPromises, fsSync, isNotFound } from "./_fs.ts";
import type {
  AppendFileOptions,
  AppendFileSyncOptions,
  FileIdentity,
  HostDurableFiles,
  SyncOptions,
} from "./host.ts";

/** Most append descriptors kept open at once. */
const APPEND_FDS = 128;

/**
 * Data up to this size is written synchronously once its file is open: a `write` into the page
 * cache costs less than handing it to another thread and back. Opening (which may create an
 * inode, slow in the kernel on some file systems) and flushing stay off the main thread.
 */
const SMALL_WRITE_BYTES = 64 * 1024;

/**
 * The durable files of a {@link NodeHost}. {@link appendFileSync} keeps a descriptor open per
 * file it appends to (a log is appended to many times); {@link forgetFile} and
 * {@link forgetTree} close them, which the host's plain file operations call before they replace
 * or remove a path.
 *
 * @example Appending a line durably
 * ```ts ignore
 * import { NodeDurableFiles } from "./node_durable_files.ts";
 * await new NodeDurableFiles().appendFile("/tmp/log.jsonl", '{"a":1}\n', { sync: true });
 * ```
 */
export class NodeDurableFiles implements HostDurableFiles {
  readonly #appendFds = new Map<string, number>();
  readonly #checkedAt = new Map<string, number>();
  /** Append descriptors with flushes running (how many), and those to close when they end. */
  readonly #syncing = new Map<number, number>();
  readonly #closeAfterSync = new Set<number>();

  /**
   * Appends with one `write` on a descriptor opened with `O_APPEND`, then `fdatasync` when
   * `options.sync`. A short write (only when the disk is full) rejects: the file then has a torn
   * tail, which readers of append-only logs must tolerate.
   *
   * @example Appending a line durably
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * await new NodeHost().appendFile("/tmp/log.jsonl", '{"a":1}\n', { sync: true });
   * ```
   *
   * @param file The file
   * @param data The bytes (strings are UTF-8 encoded)
   * @param options `sync` to flush; `create: false` to reject when the file is missing
   */
  async appendFile(
    file: string,
    data: string | Uint8Array,
    options: AppendFileOptions,
  ): Promise<void> {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const fs = await fsPromises();
    const flags = fs.constants.O_WRONLY | fs.constants.O_APPEND |
      (options.create === false ? 0 : fs.constants.O_CREAT);
    if (bytes.byteLength <= SMALL_WRITE_BYTES) {
      const fd = await openOffThread(file, flags);
      try {
        const written = fsSync().writeSync(fd, bytes, 0, bytes.byteLength);
        if (written !== bytes.byteLength) throw shortWrite(file, written, bytes.byteLength);
        if (options.sync) await datasyncOffThread(fd);
      } finally {
        fsSync().closeSync(fd);
      }
      return;
    }
    const handle = await fs.open(file, flags, 0o644);
    try {
      const { bytesWritten } = await handle.write(bytes, 0, bytes.byteLength);
      if (bytesWritten !== bytes.byteLength) {
        throw shortWrite(file, bytesWritten, bytes.byteLength);
      }
      if (options.sync) await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /**
   * Appends synchronously with one `write` on a descriptor opened with `O_APPEND`; no flush.
   *
   * @example Appending a record that must survive a crash of this process
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const host = new NodeHost();
   * host.appendFileSync("/tmp/log.jsonl", '{"a":1}\n', { create: false });
   * await host.syncFile("/tmp/log.jsonl"); // and of the machine
   * ```
   *
   * @param file The file
   * @param data The bytes (strings are UTF-8 encoded)
   * @param options `create: false` to throw when the file is missing
   */
  appendFileSync(
    file: string,
    data: string | Uint8Array,
    options?: AppendFileSyncOptions,
  ): void {
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    const fd = this.#appendFd(file, options?.create ?? true);
    try {
      const written = fsSync().writeSync(fd, bytes, 0, bytes.byteLength);
      if (written !== bytes.byteLength) throw shortWrite(file, written, bytes.byteLength);
    } catch (error) {
      this.forgetFile(file);
      throw error;
    }
  }

  /**
   * The append descriptor of `file`: the one kept open for it, else a new one kept from now on.
   * Descriptors are dropped when the path is removed or replaced, and the oldest is closed past
   * {@link APPEND_FDS}.
   */
  #appendFd(file: string, create: boolean | "exclusive"): number {
    const { constants, fstatSync, openSync } = fsSync();
    let fd = this.#appendFds.get(file);
    // A cached descriptor of a file someone has since unlinked would write into the void: check
    // (at most once a second per file, the check costs a system call).
    const now = Date.now();
    if (fd !== undefined && now - (this.#checkedAt.get(file) ?? 0) >= 1000) {
      this.#checkedAt.set(file, now);
      if (fstatSync(fd).nlink === 0) {
        this.forgetFile(file);
        fd = undefined;
      }
    }
    if (create === "exclusive") {
      // A new file, whatever this process cached for the path before.
      if (fd !== undefined) this.forgetFile(file);
      fd = undefined;
    }
    if (fd !== undefined) return fd;
    const flags = constants.O_WRONLY | constants.O_APPEND |
      (create === false ? 0 : constants.O_CREAT) |
      (create === "exclusive" ? constants.O_EXCL : 0);
    fd = openSync(file, flags, 0o644);
    this.#appendFds.set(file, fd);
    if (this.#appendFds.size > APPEND_FDS) {
      const [oldest] = this.#appendFds.keys();
      if (oldest !== undefined) this.forgetFile(oldest);
    }
    return fd;
  }

  /**
   * Removes a file whose content is `expected`, synchronously.
   *
   * @param file The file (a lock file)
   * @param expected The exact content it must have
   * @returns Whether it was removed
   */
  removeIfContentSync(file: string, expected: string): boolean {
    const { readFileSync, unlinkSync } = fsSync();
    try {
      if (readFileSync(file, "utf8") !== expected) return false;
      unlinkSync(file);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /** Removes `file` if it is still the file `expected` (device and inode). */
  removeIfSameFileSync(file: string, expected: FileIdentity): boolean {
    const { lstatSync, unlinkSync } = fsSync();
    const info = lstatSync(file, { throwIfNoEntry: false });
    if (info === undefined || info.ino !== expected.ino || info.dev !== expected.dev) return false;
    try {
      unlinkSync(file);
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  /** Closes what {@link appendFileSync} keeps open for `file`, if anything. */
  forgetFile(file: string): void {
    const fd = this.#appendFds.get(file);
    this.#checkedAt.delete(file);
    if (fd === undefined) return;
    this.#appendFds.delete(file);
    // A flush through it is running: closed when it ends (a reused number would flush another).
    if (this.#syncing.has(fd)) this.#closeAfterSync.add(fd);
    else closeQuietly(fd);
  }

  /** {@link forgetFile} for `path` and every file under it (a directory about to be removed). */
  forgetTree(path: string): void {
    for (const cached of [...this.#appendFds.keys()]) {
      if (cached === path || cached.startsWith(`${path}/`)) this.forgetFile(cached);
    }
  }

  /**
   * `fdatasync`s a file (the flush covers the file, not a descriptor): through the descriptor
   * {@link appendFileSync} keeps for it, which stays open until the flush ends, else a new one.
   * Rejects (`ENOENT`) when the file was removed before the flush: its data is gone.
   */
  async syncFile(file: string): Promise<void> {
    const fd = this.#appendFds.get(file);
    if (fd !== undefined) return await this.#syncAppendFd(file, fd);
    const handle = await (await fsPromises()).open(file, "r");
    try {
      await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /** Flushes `file` through its append descriptor `fd`, which stays open until the flush ends. */
  async #syncAppendFd(file: string, fd: number): Promise<void> {
    const { fdatasync, fstat } = fsSync();
    this.#syncing.set(fd, (this.#syncing.get(fd) ?? 0) + 1);
    try {
      await new Promise<void>((resolve, reject) =>
        fdatasync(fd, (error) => error ? reject(error) : resolve())
      );
      // Flushed into the void if the file was removed meanwhile (the descriptor outlives it).
      const links = await new Promise<number>((resolve, reject) =>
        fstat(fd, (error, info) => error ? reject(error) : resolve(info.nlink))
      );
      if (links === 0) {
        this.forgetFile(file);
        throw Object.assign(new Error(`ENOENT: "${file}" was removed before it was flushed`), {
          code: "ENOENT",
        });
      }
    } finally {
      const left = (this.#syncing.get(fd) ?? 1) - 1;
      if (left > 0) this.#syncing.set(fd, left);
      else {
        this.#syncing.delete(fd);
        if (this.#closeAfterSync.delete(fd)) closeQuietly(fd);
      }
    }
  }

  /**
   * Creates `file` with `data` unless it exists (`O_CREAT|O_EXCL`).
   *
   * @example Taking a lock file
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const mine = await new NodeHost().createExclusive("/tmp/x.lock", "{}"); // false if taken
   * ```
   *
   * @param file The file to create
   * @param data Its content
   * @param options `sync` to flush the content before resolving
   * @returns `true` when created, `false` when it already existed
   */
  async createExclusive(
    file: string,
    data: string | Uint8Array,
    options?: SyncOptions,
  ): Promise<boolean> {
    const fs = await fsPromises();
    const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
    if (bytes.byteLength <= SMALL_WRITE_BYTES) {
      return await createSmallExclusive(file, bytes, options?.sync === true);
    }
    let handle: FileHandle;
    try {
      handle = await fs.open(file, "wx", 0o644);
    } catch (error) {
      if (isExists(error)) return false;
      throw error;
    }
    try {
      await handle.writeFile(bytes);
      if (options?.sync) await handle.datasync();
    } catch (error) {
      await handle.close().catch(() => {});
      await fs.rm(file, { force: true });
      throw error;
    }
    await handle.close();
    return true;
  }

  /**
   * Links `file` as `existing`'s second name unless `file` exists (`false` then): synchronously,
   * as a link makes no inode and costs less than handing it to another thread.
   */
  async linkExclusive(existing: string, file: string): Promise<boolean> {
    await fsPromises();
    try {
      fsSync().linkSync(existing, file);
      return true;
    } catch (error) {
      if (isExists(error)) return false;
      throw error;
    }
  }

  /** Sets `file`'s modification and access times to now (synchronously: one cheap call). */
  async touch(file: string): Promise<void> {
    await fsPromises();
    const now = new Date();
    fsSync().utimesSync(file, now, now);
  }

  /** Cuts `file` to `length` bytes, then `fdatasync` when `options.sync`. */
  async truncate(file: string, length: number, options?: SyncOptions): Promise<void> {
    const handle = await (await fsPromises()).open(file, "r+");
    try {
      await handle.truncate(length);
      if (options?.sync) await handle.datasync();
    } finally {
      await handle.close();
    }
  }

  /** `fsync`s a directory so renames and creates in it survive a power loss; errors are ignored. */
  async syncDir(dir: string): Promise<void> {
    try {
      const handle = await (await fsPromises()).open(dir, "r");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
    } catch {
      // Best effort: some platforms and file systems cannot fsync a directory.
    }
  }
}

/**
 * {@link NodeDurableFiles.createExclusive} of data up to {@link SMALL_WRITE_BYTES}: opened and
 * flushed off the main thread, written on it.
 */
async function createSmallExclusive(
  file: string,
  bytes: Uint8Array,
  sync: boolean,
): Promise<boolean> {
  const { constants } = fsSync();
  let fd: number;
  try {
    fd = await openOffThread(file, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL);
  } catch (error) {
    if (isExists(error)) return false;
    throw error;
  }
  try {
    for (let offset = 0; offset < bytes.byteLength;) {
      offset += fsSync().writeSync(fd, bytes, offset, bytes.byteLength - offset);
    }
    if (sync) await datasyncOffThread(fd);
  } catch (error) {
    closeQuietly(fd);
    try {
      fsSync().rmSync(file, { force: true });
    } catch {
      // The write's error is the one to report.
    }
    throw error;
  }
  fsSync().closeSync(fd);
  return true;
}

/** Whether a file operation failed because the path exists. */
function isExists(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === "EEXIST";
}

/** The error of a write that wrote less than it was given. */
function shortWrite(file: string, written: number, length: number): Error {
  return new Error(`Cannot append to "${file}": wrote ${written} of ${length} bytes`);
}

/** Closes a descriptor, ignoring that it may be closed already. */
function closeQuietly(fd: number): void {
  try {
    fsSync().closeSync(fd);
  } catch {
    // Already closed.
  }
}

/** Opens `file` (mode 0644 when created) on the thread pool; resolves with the descriptor. */
function openOffThread(file: string, flags: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fsSync().open(file, flags, 0o644, (error, fd) => error ? reject(error) : resolve(fd))
  );
}

/** `fdatasync` on the thread pool. */
function datasyncOffThread(fd: number): Promise<void> {
  return new Promise((resolve, reject) =>
    fsSync().fdatasync(fd, (error) => error ? reject(error) : resolve())
  );
}
