import * as childProcess from "node:child_process";
import * as fs from "node:fs/promises";
import * as os from "node:os";
import * as path from "node:path";
import process from "node:process";
import type { Readable } from "node:stream";
import type { DirEntry, FileInfo, Host, HostOptions, HostProcess, SpawnOptions } from "./host.ts";

/** How long an aborted process group gets between SIGTERM and SIGKILL. */
const KILL_GRACE_MS = 2_000;
/**
 * How long after SIGKILL we keep waiting for the output pipes to close. A descendant that left
 * the process group (setsid) can hold them open forever; after this the pipes are closed on our
 * side so `exited` still settles.
 */
const PIPE_GRACE_MS = 1_000;
/** Bytes a process's output stream buffers before the pipe is paused. */
const STREAM_HIGH_WATER_BYTES = 64 * 1024;

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

  /**
   * Starts `command` in its own process group (`detached`), stdin ignored, output piped.
   *
   * Aborting `options.signal` sends SIGTERM to the group and SIGKILL 2 s later if it has not
   * ended. Read or cancel both output streams: `exited` waits for them to close.
   *
   * @example Running a command
   * ```ts ignore
   * import { NodeHost } from "./node_host.ts";
   * const child = await new NodeHost().spawn("echo", ["hi"], { cwd: "/" });
   * const text = await new Response(child.stdout).text(); // "hi\n"
   * await child.stderr.cancel();
   * const { code } = await child.exited; // 0
   * ```
   *
   * @param command The executable (looked up on `PATH` when it has no slash)
   * @param args Its arguments
   * @param options Working directory, extra environment, abort signal
   * @returns The running process, once it has started
   */
  spawn(
    command: string,
    args: readonly string[],
    options: SpawnOptions,
  ): Promise<HostProcess> {
    const signal = options.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    const env: Record<string, string> = {};
    for (const [name, value] of Object.entries(this.#env)) {
      if (value !== undefined) env[name] = value;
    }
    Object.assign(env, options.env);
    return new Promise((resolve, reject) => {
      let child: childProcess.ChildProcessByStdio<null, Readable, Readable>;
      try {
        child = childProcess.spawn(command, [...args], {
          cwd: options.cwd,
          env,
          detached: true,
          stdio: ["ignore", "pipe", "pipe"],
        });
      } catch (error) {
        reject(error);
        return;
      }
      const onError = (error: Error): void => {
        child.stdout.destroy();
        child.stderr.destroy();
        reject(error);
      };
      child.once("error", onError);
      child.once("spawn", () => {
        child.off("error", onError);
        resolve(new NodeHostProcess(child, signal));
      });
    });
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

/** A child started by {@link NodeHost.spawn}, the leader of its own process group. */
class NodeHostProcess implements HostProcess {
  readonly pid: number;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly exited: Promise<{ readonly code: number | null; readonly signal: string | null }>;
  readonly #child: childProcess.ChildProcessByStdio<null, Readable, Readable>;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    child: childProcess.ChildProcessByStdio<null, Readable, Readable>,
    signal: AbortSignal | undefined,
  ) {
    this.#child = child;
    this.pid = child.pid as number;
    this.stdout = toWebStream(child.stdout);
    this.stderr = toWebStream(child.stderr);
    const onAbort = (): void => this.#terminate();
    this.exited = new Promise((resolve) => {
      child.once("close", (code: number | null, exitSignal: NodeJS.Signals | null) => {
        this.#closed = true;
        clearTimeout(this.#timer);
        signal?.removeEventListener("abort", onAbort);
        resolve({ code, signal: exitSignal });
      });
    });
    // A late error (e.g. a failed kill) must not become an unhandled "error" event.
    child.on("error", () => {});
    if (signal?.aborted) this.#terminate();
    else signal?.addEventListener("abort", onAbort, { once: true });
  }

  /** Sends `signal` (default SIGTERM) to the whole process group; a no-op once it has ended. */
  kill(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): void {
    if (this.#closed) return;
    try {
      process.kill(-this.pid, signal);
    } catch (error) {
      if ((error as { code?: unknown } | null)?.code !== "ESRCH") throw error;
    }
  }

  /** {@link kill} from an abort listener or a timer, where a throw would be uncaught. */
  #killQuietly(signal: "SIGTERM" | "SIGKILL"): void {
    try {
      this.kill(signal);
    } catch {
      // EPERM cannot happen for our own process group; nothing else is worth crashing for.
    }
  }

  /** SIGTERM now, SIGKILL after the grace period, then stop waiting for the pipes. */
  #terminate(): void {
    if (this.#closed || this.#timer !== undefined) return;
    this.#killQuietly("SIGTERM");
    this.#timer = setTimeout(() => {
      this.#killQuietly("SIGKILL");
      this.#timer = setTimeout(() => {
        this.#child.stdout.destroy();
        this.#child.stderr.destroy();
      }, PIPE_GRACE_MS);
    }, KILL_GRACE_MS);
  }
}

/** A web byte stream over a Node readable, with backpressure and cancellation. */
function toWebStream(readable: Readable): ReadableStream<Uint8Array> {
  let done = false;
  return new ReadableStream<Uint8Array>({
    start(controller): void {
      readable.on("data", (chunk: Uint8Array) => {
        if (done) return;
        controller.enqueue(new Uint8Array(chunk));
        if ((controller.desiredSize ?? 1) <= 0) readable.pause();
      });
      const finish = (): void => {
        if (done) return;
        done = true;
        controller.close();
      };
      readable.once("end", finish);
      // Destroyed without an end (e.g. after a kill): what arrived is all there is.
      readable.once("close", finish);
      readable.once("error", finish);
    },
    pull(): void {
      readable.resume();
    },
    cancel(): void {
      done = true;
      readable.destroy();
    },
  }, { highWaterMark: STREAM_HIGH_WATER_BYTES, size: (chunk) => chunk.byteLength });
}

function isNotFound(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}
