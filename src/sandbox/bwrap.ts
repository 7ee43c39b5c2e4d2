/**
 * The bubblewrap backend (Linux): `bwrap` builds each command a mount namespace with the whole
 * file system read-only, the session's roots writable, a private `/tmp`, the credential
 * directories hidden, and its own (empty) network, PID, IPC and UTS namespaces.
 *
 * @module
 */
import type { HostProcesses, ProbeResult } from "../host/host.ts";
import type {
  HiddenPath,
  SandboxBackend,
  SandboxDetection,
  SandboxRequest,
  WrappedCommand,
} from "./sandbox.ts";

/** The environment variable that names the bubblewrap binary. */
export const BWRAP_ENV = "ACP_HARNESS_BWRAP";

/** How long the start-up probe may take. */
export const BWRAP_PROBE_TIMEOUT_MS = 5000;

/**
 * Whether `path` is `dir` or inside it.
 *
 * @param path Absolute path
 * @param dir Absolute directory
 * @returns `true` when `path` is `dir` or below it
 */
function within(path: string, dir: string): boolean {
  return path === dir || dir === "/" || path.startsWith(`${dir}/`);
}

/**
 * The bubblewrap arguments that run `request.program` confined as `request` says. In order:
 * namespaces; the root file system read-only; fresh `/dev`, `/proc` and a private `/tmp`; each
 * root bound again, writable at `workspace-write` and read-only at `read-only` (after the `/tmp`
 * tmpfs, so a root under `/tmp` stays visible); then the hidden paths (a tmpfs over a directory,
 * `/dev/null` over a file), except a root itself or one that the private `/tmp` hides anyway; a
 * hidden directory that holds a root first, with the root bound again over it; the working
 * directory; the program.
 *
 * @example A workspace-write command
 * ```ts
 * import assert from "node:assert/strict";
 * import { bwrapArgs } from "./bwrap.ts";
 * const args = bwrapArgs({
 *   level: "workspace-write", roots: ["/w"], cwd: "/w", network: false, hide: [],
 *   program: "/bin/sh", args: ["-c", "make"],
 * });
 * assert.deepEqual(args.slice(-6), ["--chdir", "/w", "--", "/bin/sh", "-c", "make"]);
 * assert(args.includes("--unshare-all") && !args.includes("--share-net"));
 * ```
 *
 * @param request The command and its confinement
 * @returns The arguments after `bwrap`
 */
export function bwrapArgs(request: SandboxRequest): string[] {
  const args = ["--unshare-all"];
  if (request.network) args.push("--share-net");
  args.push("--die-with-parent", "--new-session");
  args.push("--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp");
  // Bound after the private /tmp: a root under /tmp stays visible (read-only at `read-only`).
  const bind = request.level === "workspace-write" ? "--bind" : "--ro-bind";
  for (const root of request.roots) args.push(bind, root, root);
  const hidden = visibleHidden(request.hide, request.roots);
  const hide = (path: HiddenPath): void => {
    if (path.directory) args.push("--tmpfs", path.path);
    else args.push("--ro-bind", "/dev/null", path.path);
  };
  // A hidden directory that holds a root (a session's worktree in the data directory) is hidden
  // first and the root bound again over it: the root is seen, nothing else of the directory is.
  const holding = hidden.filter(({ path, directory }) =>
    directory && request.roots.some((root) => root !== path && within(root, path))
  );
  for (const path of holding) hide(path);
  for (const root of request.roots) {
    if (holding.some(({ path }) => within(root, path))) args.push(bind, root, root);
  }
  for (const path of hidden) if (!holding.includes(path)) hide(path);
  args.push("--chdir", request.cwd, "--", request.program, ...request.args);
  return args;
}

/**
 * The hidden paths to mount over: not one that is a root, and not one under `/tmp` outside the
 * roots (the private `/tmp` hides it, and its mount point would not exist there). One that
 * contains a root is mounted over before the root is bound again (see {@link bwrapArgs}).
 */
function visibleHidden(hide: readonly HiddenPath[], roots: readonly string[]): HiddenPath[] {
  return hide.filter(({ path, directory }) => {
    if (directory && roots.some((root) => root === path)) return false;
    if (within(path, "/tmp") && !roots.some((root) => within(path, root))) return false;
    return true;
  });
}

/** The bubblewrap backend: a {@link SandboxBackend} that runs `bwrap <args> -- program args`. */
export class BwrapBackend implements SandboxBackend {
  /** The backend's name: `bubblewrap`. */
  readonly name = "bubblewrap";
  readonly #binary: string;

  /**
   * Makes the backend.
   *
   * @param binary The `bwrap` binary (a path, or a name looked up on `PATH`)
   */
  constructor(binary: string) {
    this.#binary = binary;
  }

  /**
   * The argv `bwrap <bwrapArgs(request)>`.
   *
   * @param request The command and its confinement
   * @returns What to run
   */
  wrap(request: SandboxRequest): WrappedCommand {
    return { program: this.#binary, args: bwrapArgs(request) };
  }
}

/**
 * Probes for a working bubblewrap: runs `bwrap --unshare-all --ro-bind / / … true` (namespaces
 * may be disabled, or bwrap lack the privilege to make them), bounded in time.
 *
 * @param processes Starts the probe
 * @param binary The binary (`ACP_HARNESS_BWRAP`, else `bwrap`)
 * @param signal Aborts the probe (it then reports unavailable)
 * @returns The backend, or why there is none
 */
export async function detectBwrap(
  processes: HostProcesses,
  binary: string,
  signal?: AbortSignal,
): Promise<SandboxDetection> {
  const args = bwrapArgs({
    level: "read-only",
    roots: [],
    cwd: "/",
    network: false,
    hide: [],
    program: "true",
    args: [],
  });
  try {
    signal?.throwIfAborted();
    const result = processes.probe
      ? await processes.probe(binary, args, { timeoutMs: BWRAP_PROBE_TIMEOUT_MS })
      : await spawnProbe(processes, binary, args, signal);
    if (result.code === 0) return { available: true, backend: new BwrapBackend(binary) };
    if (result.code === null) {
      return { available: false, reason: `${binary} did not answer in time` };
    }
    const detail = result.stderr.trim().split("\n").pop() ?? "";
    return {
      available: false,
      reason: `${binary} cannot make a sandbox here${detail ? `: ${detail}` : ""}`,
    };
  } catch (error) {
    return { available: false, reason: `cannot run ${binary}: ${(error as Error).message}` };
  }
}

/** The probe through {@link HostProcesses.spawn}, for a host without `probe`. */
async function spawnProbe(
  processes: HostProcesses,
  binary: string,
  args: readonly string[],
  signal: AbortSignal | undefined,
): Promise<ProbeResult> {
  const stop = new AbortController();
  const timer = setTimeout(() => stop.abort(), BWRAP_PROBE_TIMEOUT_MS);
  const onAbort = (): void => stop.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    const child = await processes.spawn(binary, args, { cwd: "/", signal: stop.signal });
    const [stderr, exit] = await Promise.all([
      new Response(child.stderr).text(),
      child.exited,
      new Response(child.stdout).arrayBuffer(),
    ]);
    return { code: stop.signal.aborted ? null : exit.code, stderr };
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}
