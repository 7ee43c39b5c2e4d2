/**
 * The command sandbox's vocabulary: its levels and their order, what a backend is asked to wrap
 * and what it gives back, the outcome of probing for a backend, and the one line that tells the
 * model the sandbox refused what a command tried. A backend (bubblewrap today; macOS
 * `sandbox-exec` or Landlock later) is one file that implements {@link SandboxBackend}.
 *
 * @module
 */

/**
 * How much a command may do: `off` (unconfined), `workspace-write` (the session's roots
 * writable, the rest of the file system read-only, no network) or `read-only` (nothing writable
 * but a private `/tmp`).
 */
export type SandboxLevel = "off" | "read-only" | "workspace-write";

/** Every level, loosest first: the order of {@link sandboxTightness}. */
export const SANDBOX_LEVELS: readonly SandboxLevel[] = Object.freeze([
  "off",
  "workspace-write",
  "read-only",
]);

/**
 * Whether `value` is a sandbox level.
 *
 * @param value Any value
 * @returns `true` for `off`, `read-only` and `workspace-write`
 */
export function isSandboxLevel(value: unknown): value is SandboxLevel {
  return typeof value === "string" && (SANDBOX_LEVELS as readonly string[]).includes(value);
}

/**
 * How tight a level is: `off` 0 < `workspace-write` 1 < `read-only` 2.
 *
 * @param level The level
 * @returns Its rank
 */
export function sandboxTightness(level: SandboxLevel): number {
  return SANDBOX_LEVELS.indexOf(level);
}

/**
 * The levels at least as tight as `level`, loosest first: what a session of a server at `level`
 * may choose.
 *
 * @example The levels a workspace-write server offers
 * ```ts
 * import assert from "node:assert/strict";
 * import { levelsAtLeast } from "./sandbox.ts";
 * assert.deepEqual(levelsAtLeast("workspace-write"), ["workspace-write", "read-only"]);
 * ```
 *
 * @param level The loosest level
 * @returns `level` and the tighter ones
 */
export function levelsAtLeast(level: SandboxLevel): SandboxLevel[] {
  return SANDBOX_LEVELS.filter((candidate) =>
    sandboxTightness(candidate) >= sandboxTightness(level)
  );
}

/** What a backend is asked to confine: one command of one session. */
export interface SandboxRequest {
  /** The level, never `off` (an unconfined command is not wrapped). */
  readonly level: Exclude<SandboxLevel, "off">;
  /** The session's canonical roots, the cwd first: writable at `workspace-write`. */
  readonly roots: readonly string[];
  /** The command's absolute working directory. */
  readonly cwd: string;
  /** Whether the command may reach the network (`--sandbox-network`). */
  readonly network: boolean;
  /** Existing files and directories the command must not see (credentials, the data directory). */
  readonly hide: readonly HiddenPath[];
  /** The program to run inside (`/bin/sh`). */
  readonly program: string;
  /** Its arguments (`["-c", command]`). */
  readonly args: readonly string[];
}

/** A path to hide: a directory gets an empty one over it, a file an empty file. */
export interface HiddenPath {
  /** Absolute path. */
  readonly path: string;
  /** Whether it is a directory. */
  readonly directory: boolean;
}

/** What to run instead of the command: the sandboxed argv. */
export interface WrappedCommand {
  /** The program to start. */
  readonly program: string;
  /** Its arguments. */
  readonly args: readonly string[];
  /** Undoes what the wrap set up (a pids cgroup), once the command has ended. */
  readonly cleanup?: () => Promise<void>;
}

/** One way to confine commands on one kind of system. */
export interface SandboxBackend {
  /** Its name, for messages (`bubblewrap`). */
  readonly name: string;
  /**
   * The argv that runs `request.program` confined as `request` says.
   *
   * @param request The command and its confinement
   * @returns What to run
   */
  wrap(request: SandboxRequest): WrappedCommand;
}

/** What probing for a backend found. */
export type SandboxDetection =
  | { readonly available: true; readonly backend: SandboxBackend }
  | { readonly available: false; readonly reason: string };

/** How to get the sandbox where it is missing, for the start-up messages. */
export const SANDBOX_INSTALL_HINT =
  "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap; " +
  "Arch: pacman -S bubblewrap) or set ACP_HARNESS_BWRAP to its path";

const WRITE_REFUSED = /Read-only file system|EROFS|Invalid cross-device link|EXDEV/;
const NETWORK_REFUSED =
  /Network is unreachable|ENETUNREACH|Could not resolve host|Temporary failure in name resolution|EAI_AGAIN|Connection refused|ECONNREFUSED|Couldn't connect to server|Name or service not known/;
const FORK_REFUSED = /Resource temporarily unavailable|Cannot fork|EAGAIN|fork: retry/;

/**
 * The one line that tells the model the sandbox refused what a failed command tried, when its
 * output shows a refused write, connection or fork; `undefined` when it shows none (or the
 * command succeeded, or ran unconfined).
 *
 * @example A refused write
 * ```ts
 * import assert from "node:assert/strict";
 * import { refusalLine } from "./sandbox.ts";
 * const line = refusalLine("workspace-write", false, {
 *   output: "sh: 1: cannot create /etc/x: Read-only file system", exitCode: 2,
 * });
 * assert.match(line ?? "", /^\[sandbox workspace-write:/);
 * ```
 *
 * @param level The level the command ran at
 * @param network Whether it could reach the network
 * @param result Its output and exit code
 * @returns The line, or `undefined`
 */
export function refusalLine(
  level: SandboxLevel,
  network: boolean,
  result: { readonly output: string; readonly exitCode: number | null },
): string | undefined {
  if (level === "off" || result.exitCode === 0) return undefined;
  const { output } = result;
  const refused = WRITE_REFUSED.test(output) || (!network && NETWORK_REFUSED.test(output)) ||
    FORK_REFUSED.test(output);
  if (!refused) return undefined;
  return `[${sandboxSummary(level, network)}]`;
}

/**
 * What a level refuses, in one phrase (the refusal line, the system prompt).
 *
 * @param level The level
 * @param network Whether commands may reach the network
 * @returns E.g. `sandbox workspace-write: writes outside the workspace and network access are refused`
 */
export function sandboxSummary(level: SandboxLevel, network: boolean): string {
  if (level === "off") return "sandbox off: commands run unconfined";
  const writes = level === "read-only"
    ? "writes anywhere but a private /tmp"
    : "writes outside the workspace";
  const refused = network ? `${writes} are` : `${writes} and network access are`;
  return `sandbox ${level}: ${refused} refused`;
}
