/**
 * The server's command sandbox: the level it was started with, the backend that confines, the
 * paths hidden from commands and the pids bound, set up once at start-up and asked by each
 * session to wrap its commands at the session's own level.
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import { BWRAP_ENV, detectBwrap } from "./bwrap.ts";
import { findPidsCgroups, type PidsCgroups } from "./pids_cgroup.ts";
import {
  type HiddenPath,
  levelsAtLeast,
  SANDBOX_INSTALL_HINT,
  type SandboxBackend,
  type SandboxDetection,
  type SandboxLevel,
  sandboxTightness,
  type WrappedCommand,
} from "./sandbox.ts";

/**
 * The credential directories and files under the home directory that sandboxed commands do not
 * see (those that exist at start-up).
 */
export const HIDDEN_HOME_PATHS: readonly string[] = Object.freeze([
  ".ssh",
  ".aws",
  ".config/gcloud",
  ".gnupg",
  ".kube",
  ".docker",
  ".netrc",
  ".git-credentials",
  ".npmrc",
  ".config/gh",
]);

/** The default bound on the processes of one sandboxed command (`--sandbox-pids`). */
export const DEFAULT_SANDBOX_PIDS = 1024;

/** Thrown when a requested sandbox cannot be set up: the server must not start. */
export class SandboxUnavailableError extends Error {
  /**
   * Makes the error.
   *
   * @param message Names bubblewrap, why it does not work and how to get it
   */
  constructor(message: string) {
    super(message);
    this.name = "SandboxUnavailableError";
  }
}

/** What a {@link CommandSandbox} is built from. */
export interface CommandSandboxOptions {
  /** The server's level: sessions may choose it or a tighter one. */
  readonly level: SandboxLevel;
  /** The backend; absent when none works here (then only `off` can be chosen). */
  readonly backend?: SandboxBackend | undefined;
  /** Whether commands may reach the network. @default {false} */
  readonly network?: boolean;
  /** Paths commands must not see. @default {[]} */
  readonly hide?: readonly HiddenPath[];
  /** The most processes of one command, when a pids cgroup is available. @default {1024} */
  readonly pidsLimit?: number;
  /** Where the commands' pids cgroups are made; absent: no pids bound. */
  readonly cgroups?: PidsCgroups | undefined;
  /** The one warning line of a default sandbox that fell back to `off`. */
  readonly warning?: string | undefined;
  /** Whether MCP stdio servers and delegated agents run sandboxed too. @default {false} */
  readonly children?: boolean;
}

/** How one command of a session is to be confined. */
export interface SandboxedCommandRequest {
  /** The session's canonical roots, the cwd first. */
  readonly roots: readonly string[];
  /** The command's working directory. */
  readonly cwd: string;
  /** The program (`/bin/sh`). */
  readonly program: string;
  /** Its arguments. */
  readonly args: readonly string[];
  /** Paths writable besides the roots (a delegated agent's data directory). */
  readonly writable?: readonly string[];
}

/**
 * The sandbox every session of a server confines its commands with.
 *
 * @example Wrapping a command
 * ```ts
 * import assert from "node:assert/strict";
 * import { BwrapBackend } from "./bwrap.ts";
 * import { CommandSandbox } from "./command_sandbox.ts";
 * const sandbox = new CommandSandbox({ level: "workspace-write", backend: new BwrapBackend("bwrap") });
 * const wrapped = sandbox.wrap("workspace-write", {
 *   roots: ["/w"], cwd: "/w", program: "/bin/sh", args: ["-c", "make"],
 * });
 * assert.equal(wrapped?.program, "bwrap");
 * assert.equal(sandbox.wrap("off", { roots: [], cwd: "/", program: "true", args: [] }), undefined);
 * ```
 */
export class CommandSandbox {
  /** The server's level. */
  readonly level: SandboxLevel;
  /** Whether commands may reach the network. */
  readonly network: boolean;
  /** The warning line when the default sandbox fell back to `off`. */
  readonly warning: string | undefined;
  /** Whether MCP stdio servers and delegated agents are sandboxed too. */
  readonly children: boolean;
  /** The bound on one command's processes, or `undefined` when there is none. */
  readonly pidsLimit: number | undefined;
  readonly #backend: SandboxBackend | undefined;
  readonly #hide: readonly HiddenPath[];
  readonly #cgroups: PidsCgroups | undefined;

  /**
   * Makes the server's sandbox.
   *
   * @param options The level, the backend and what it hides
   * @throws {SandboxUnavailableError} For a level other than `off` without a backend
   */
  constructor(options: CommandSandboxOptions) {
    if (options.level !== "off" && options.backend === undefined) {
      throw new SandboxUnavailableError(`Cannot sandbox commands (${options.level}): no backend`);
    }
    this.level = options.level;
    this.network = options.network ?? false;
    this.warning = options.warning;
    this.children = options.children ?? false;
    this.#backend = options.backend;
    this.#hide = options.hide ?? [];
    this.#cgroups = options.cgroups;
    this.pidsLimit = options.cgroups ? options.pidsLimit ?? DEFAULT_SANDBOX_PIDS : undefined;
  }

  /** The backend's name, or `undefined` when there is none. */
  get backendName(): string | undefined {
    return this.#backend?.name;
  }

  /** The levels a session may choose: the server's and tighter ones that can be set up. */
  levels(): SandboxLevel[] {
    return this.#backend ? levelsAtLeast(this.level) : ["off"];
  }

  /**
   * Whether a session may run at `level`.
   *
   * @param level The level asked for
   * @returns `undefined` when it may, else why not
   */
  refuse(level: SandboxLevel): string | undefined {
    if (sandboxTightness(level) < sandboxTightness(this.level)) {
      return `"${level}" is looser than the server's sandbox "${this.level}"`;
    }
    if (level !== "off" && !this.#backend) {
      return `"${level}" cannot be set up here (no working bubblewrap)`;
    }
    return undefined;
  }

  /**
   * What runs `request` at `level`: `undefined` for `off` (the command runs as it is).
   *
   * @param level The session's level
   * @param request The command, its working directory and the session's roots
   * @returns The sandboxed argv and its clean-up, or `undefined` for `off`
   * @throws {SandboxUnavailableError} When `level` is not `off` and there is no backend
   */
  wrap(level: SandboxLevel, request: SandboxedCommandRequest): WrappedCommand | undefined {
    if (level === "off") return undefined;
    if (!this.#backend) {
      throw new SandboxUnavailableError(`Cannot sandbox the command (${level}): no backend`);
    }
    const wrapped = this.#backend.wrap({
      level,
      roots: [...request.roots, ...request.writable ?? []],
      cwd: request.cwd,
      network: this.network,
      hide: this.#hide,
      program: request.program,
      args: request.args,
    });
    return this.#cgroups && this.pidsLimit !== undefined
      ? this.#cgroups.wrap(wrapped, this.pidsLimit)
      : wrapped;
  }

  /**
   * Removes the pids cgroups that dead servers left.
   *
   * @returns How many were removed
   */
  reapStale(): Promise<number> {
    return this.#cgroups?.reapStale() ?? Promise.resolve(0);
  }
}

/** What {@link setUpSandbox} is asked. */
export interface SandboxSetup {
  /** The level asked for explicitly; absent: `workspace-write` where it works, else `off`. */
  readonly requested?: SandboxLevel | undefined;
  /** `--sandbox-network`. @default {false} */
  readonly network?: boolean;
  /** `--sandbox-pids`. @default {1024} */
  readonly pidsLimit?: number;
  /** `--sandbox-children`. @default {false} */
  readonly children?: boolean;
  /** Paths hidden besides the home's credentials: the data directory, the token file. */
  readonly hide?: readonly string[];
  /** Aborts the probe. */
  readonly signal?: AbortSignal;
}

/**
 * Sets the server's sandbox up: probes bubblewrap (`ACP_HARNESS_BWRAP`, else `bwrap`), finds a
 * pids cgroup, looks which credential paths exist, all at once.
 *
 * @param host Runs the probe and reads the file system
 * @param setup What was asked
 * @returns The sandbox; for the default where bubblewrap does not work, `off` with a warning
 * @throws {SandboxUnavailableError} When a sandbox was asked for explicitly and cannot be set up
 */
export async function setUpSandbox(host: Host, setup: SandboxSetup): Promise<CommandSandbox> {
  const { requested } = setup;
  const base = {
    network: setup.network ?? false,
    children: setup.children ?? false,
    ...(setup.pidsLimit === undefined ? {} : { pidsLimit: setup.pidsLimit }),
  };
  if (requested === "off") return new CommandSandbox({ level: "off", ...base });
  const binary = host.env(BWRAP_ENV) || "bwrap";
  const home = host.homeDir();
  const candidates = [...HIDDEN_HOME_PATHS.map((path) => `${home}/${path}`), ...setup.hide ?? []];
  const [detection, cgroups, hide] = await Promise.all([
    detectBwrap(host, binary, setup.signal),
    findPidsCgroups(host),
    existing(host, candidates),
  ]);
  if (!detection.available) {
    if (requested !== undefined) {
      throw new SandboxUnavailableError(
        `Cannot set up the ${requested} sandbox: bubblewrap does not work here (${detection.reason}); ${SANDBOX_INSTALL_HINT}, or pass --sandbox off`,
      );
    }
    return new CommandSandbox({ level: "off", ...base, warning: fallbackWarning(detection) });
  }
  return new CommandSandbox({
    level: requested ?? "workspace-write",
    backend: detection.backend,
    hide,
    cgroups,
    ...base,
  });
}

/** The one warning line of a default sandbox that fell back to `off`. */
function fallbackWarning(detection: Extract<SandboxDetection, { available: false }>): string {
  return `commands run without a sandbox: ${detection.reason}; ${SANDBOX_INSTALL_HINT}, or pass --sandbox off to silence this`;
}

/** Those of `paths` that exist, with whether each is a directory. */
async function existing(host: Host, paths: readonly string[]): Promise<HiddenPath[]> {
  const found = await Promise.all(paths.map(async (path) => {
    const info = await host.stat(path).catch(() => undefined);
    return info ? { path, directory: info.isDirectory } : undefined;
  }));
  return found.filter((entry): entry is HiddenPath => entry !== undefined);
}
