/**
 * {@link HostFiles} on `node:fs`: whole-file reads, atomic writes, metadata and directories.
 *
 * @module
 */
import type * as NodeFs from "node:fs";
import type * as NodeFsPromises from "node:fs/promises";
import * as path from "node:path";
import { fsPromises, fsSync, isNotFound } from "./_fs.ts";
import type { DirEntry, FileInfo, HostFiles, HostOptions } from "./host.ts";

/**
 * What keeps files open by path (the append descriptors of {@link NodeDurableFiles}): it lets go
 * of a path before {@link NodeFiles} replaces or removes it, so that no write lands in a file
 * that no longer has that name.
 */
export interface OpenFiles {
  /** Closes what is kept open for `path`. */
  forgetFile(path: string): void;
  /** Closes what is kept open for `path` and for every file under it. */
  forgetTree(path: string): void;
}

/**
 * The plain files of a {@link NodeHost}.
 *
 * @example Reading a file
 * ```ts ignore
 * import { NodeFiles } from "./node_files.ts";
 * const text = await new NodeFiles().readTextFile("/etc/hostname");
 * ```
 */
export class NodeFiles implements HostFiles {
  readonly #open: OpenFiles | undefined;

  /**
   * Creates the file part of a host.
   *
   * @param open What keeps files open and must let go of a path before it is replaced or removed
   */
  constructor(open?: OpenFiles) {
    this.#open = open;
  }

  /** Reads a whole file. */
  async readFile(file: string, options?: HostOptions): Promise<Uint8Array> {
    const fs = await fsPromises();
    const buffer = await fs.readFile(file, options?.signal ? { signal: options.signal } : {});
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }

  /** Reads a whole file as UTF-8. */
  async readTextFile(file: string, options?: HostOptions): Promise<string> {
    const fs = await fsPromises();
    return await fs.readFile(file, {
      encoding: "utf8",
      ...(options?.signal ? { signal: options.signal } : {}),
    });
  }

  /**
   * Reads bytes `start` to `end` (exclusive; default the current end of the file). Returns fewer
   * bytes when the file is shorter.
   *
   * @example Reading what was appended since the last read
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const tail = await new NodeHost().readFileRange("/tmp/log.jsonl", 1024);
   * ```
   *
   * @param file The file
   * @param start First byte
   * @param end Byte after the last one
   * @returns The bytes read
   */
  async readFileRange(file: string, start: number, end?: number): Promise<Uint8Array> {
    const handle = await (await fsPromises()).open(file, "r");
    try {
      const stop = end ?? (await handle.stat()).size;
      const buffer = new Uint8Array(Math.max(0, stop - start));
      let filled = 0;
      while (filled < buffer.byteLength) {
        const { bytesRead } = await handle.read(
          buffer,
          filled,
          buffer.byteLength - filled,
          start + filled,
        );
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      return filled === buffer.byteLength ? buffer : buffer.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  /** Writes through a temporary sibling and a rename. */
  async writeFileAtomic(
    file: string,
    data: Uint8Array | string,
    options?: HostOptions,
  ): Promise<void> {
    const fs = await fsPromises();
    const temp = path.join(
      path.dirname(file),
      `.${path.basename(file)}.${crypto.randomUUID()}.tmp`,
    );
    try {
      await fs.writeFile(temp, data, options?.signal ? { signal: options.signal } : {});
      this.#open?.forgetFile(file);
      await fs.rename(temp, file);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw error;
    }
  }

  /** Stats without following a final symlink's absence into an error. */
  async stat(file: string): Promise<FileInfo | undefined> {
    const fs = await fsPromises();
    try {
      const link = await fs.lstat(file);
      const info = link.isSymbolicLink() ? await fs.stat(file) : link;
      return fileInfo(info, link.isSymbolicLink());
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Resolves symlinks. */
  async realpath(file: string): Promise<string> {
    return await (await fsPromises()).realpath(file);
  }

  /** {@link stat}, synchronously. */
  statSync(file: string): FileInfo | undefined {
    const fs = fsSync();
    try {
      // Missing is the common case (an `AGENTS.md` looked for): answered without an exception.
      const link = fs.lstatSync(file, { throwIfNoEntry: false });
      if (link === undefined) return undefined;
      const info = link.isSymbolicLink() ? fs.statSync(file, { throwIfNoEntry: false }) : link;
      return info && fileInfo(info, link.isSymbolicLink());
    } catch (error) {
      // As `stat`: a path through a file (ENOTDIR) does not exist either.
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** {@link realpath}, synchronously. */
  realpathSync(file: string): string {
    return fsSync().realpathSync.native(file);
  }

  /** Lists a directory. */
  async readDir(dir: string): Promise<DirEntry[]> {
    const entries = await (await fsPromises()).readdir(dir, { withFileTypes: true });
    return entries.map((entry) => ({
      name: entry.name,
      isFile: entry.isFile(),
      isDirectory: entry.isDirectory(),
      isSymlink: entry.isSymbolicLink(),
    }));
  }

  /**
   * Creates a directory and its parents. Level by level rather than with `recursive: true`: on
   * Node.js 20 that never settles (a loop at full CPU) for a directory under `/proc`, where
   * `mkdir` fails with ENOENT although the parent exists.
   */
  async mkdir(dir: string): Promise<void> {
    const fs = await fsPromises();
    await makeDirectory(fs, dir.length > 1 && dir.endsWith("/") ? dir.slice(0, -1) : dir, 0);
  }

  /**
   * Removes a file or a directory tree; a missing path is fine. An empty directory goes with
   * `rmdir` first: on Deno and Bun `rm` of a cgroup's directory (whose control files cannot be
   * unlinked, only the directory removed) fails with EPERM.
   */
  async remove(file: string): Promise<void> {
    this.#open?.forgetTree(file);
    const fs = await fsPromises();
    try {
      await fs.rmdir(file);
      return;
    } catch {
      // Not an empty directory (or missing): removed as a tree below.
    }
    await fs.rm(file, { recursive: true, force: true });
  }

  /** Renames atomically, replacing `to`. */
  rename(from: string, to: string): Promise<void> {
    this.#open?.forgetFile(from);
    this.#open?.forgetFile(to);
    return fsPromises().then((fs) => fs.rename(from, to));
  }
}

/** Makes `dir`, and its missing parents first when it has to (`depth`: levels made so far). */
async function makeDirectory(
  fs: typeof NodeFsPromises,
  dir: string,
  depth: number,
): Promise<void> {
  try {
    await fs.mkdir(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") {
      if ((await fs.stat(dir)).isDirectory()) return;
      throw error;
    }
    const parent = dir.slice(0, dir.lastIndexOf("/"));
    // The parent is made once; a second ENOENT is final (so nothing can loop).
    if (code !== "ENOENT" || parent === "" || parent === dir || depth > 4096) throw error;
    await makeDirectory(fs, parent, depth + 1);
    await fs.mkdir(dir).catch(async (again: NodeJS.ErrnoException) => {
      if (again.code !== "EEXIST" || !(await fs.stat(dir)).isDirectory()) throw again;
    });
  }
}

/** A host's {@link FileInfo} of `node:fs` stats (`symlink`: the path itself is a link). */
function fileInfo(info: NodeFs.Stats, symlink: boolean): FileInfo {
  return {
    isFile: info.isFile(),
    isDirectory: info.isDirectory(),
    isSymlink: symlink,
    size: info.size,
    mtimeMs: info.mtimeMs,
    ino: info.ino,
    dev: info.dev,
  };
}
