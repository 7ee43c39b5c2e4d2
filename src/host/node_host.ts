import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import type { DirEntry, FileInfo, Host, HostOptions } from "./host.ts";

/**
 * The {@link Host} on `node:` built-ins; works unchanged on Deno, Node.js and Bun.
 *
 * @example Reading a file
 * ```ts ignore
 * import { NodeHost } from "./node_host.ts";
 * const text = await new NodeHost().readTextFile("/etc/hostname");
 * ```
 */
export class NodeHost implements Host {
  readonly #env: Readonly<Record<string, string | undefined>>;

  /** @param env The environment to expose (defaults to the process environment) */
  constructor(env?: Readonly<Record<string, string | undefined>>) {
    this.#env = env ?? process.env;
  }

  /** Reads a whole file. */
  async readFile(file: string, options?: HostOptions): Promise<Uint8Array> {
    const buffer = await fs.readFile(file, options?.signal ? { signal: options.signal } : {});
    return new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  }

  /** Reads a whole file as UTF-8. */
  readTextFile(file: string, options?: HostOptions): Promise<string> {
    return fs.readFile(file, {
      encoding: "utf8",
      ...(options?.signal ? { signal: options.signal } : {}),
    });
  }

  /** Writes through a temporary sibling and a rename. */
  async writeFileAtomic(
    file: string,
    data: Uint8Array | string,
    options?: HostOptions,
  ): Promise<void> {
    const temp = path.join(
      path.dirname(file),
      `.${path.basename(file)}.${crypto.randomUUID()}.tmp`,
    );
    try {
      await fs.writeFile(temp, data, options?.signal ? { signal: options.signal } : {});
      await fs.rename(temp, file);
    } catch (error) {
      await fs.rm(temp, { force: true });
      throw error;
    }
  }

  /** Stats without following a final symlink's absence into an error. */
  async stat(file: string): Promise<FileInfo | undefined> {
    try {
      const link = await fs.lstat(file);
      const info = link.isSymbolicLink() ? await fs.stat(file) : link;
      return {
        isFile: info.isFile(),
        isDirectory: info.isDirectory(),
        isSymlink: link.isSymbolicLink(),
        size: info.size,
        mtimeMs: info.mtimeMs,
      };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  }

  /** Resolves symlinks. */
  realpath(file: string): Promise<string> {
    return fs.realpath(file);
  }

  /** Lists a directory. */
  async readDir(dir: string): Promise<DirEntry[]> {
    const entries = await fs.readdir(dir, { withFileTypes: true });
    return entries.map((entry) => ({
      name: entry.name,
      isFile: entry.isFile(),
      isDirectory: entry.isDirectory(),
      isSymlink: entry.isSymbolicLink(),
    }));
  }

  /** Creates a directory and its parents. */
  async mkdir(dir: string): Promise<void> {
    await fs.mkdir(dir, { recursive: true });
  }

  /** Removes a file or a directory tree; a missing path is fine. */
  async remove(file: string): Promise<void> {
    await fs.rm(file, { recursive: true, force: true });
  }

  /** The user's home directory. */
  homeDir(): string {
    return os.homedir();
  }

  /** An environment variable. */
  env(name: string): string | undefined {
    return this.#env[name];
  }

  /** Milliseconds since the epoch. */
  now(): number {
    return Date.now();
  }
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
