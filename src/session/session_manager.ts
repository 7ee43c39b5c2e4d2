import { sandboxedProcesses } from "../sandbox/sandboxed_processes.ts";
import type { CompactionNotices } from "../compaction/compactor.ts";
import type { BudgetLimits } from "../agent/turn_budget.ts";
import { SessionNotFoundError } from "../util/session_not_found_error.ts";
import type { PermissionMode } from "../permission/mode.ts";
import type { Logger } from "../log/logger.ts";
import {
  type ListOptions,
  type SessionHeader,
  type SessionLease,
  SessionLockedError,
  type SessionPage,
  type SessionParent,
  type SessionRecordStream,
  type StoredEvent,
  type StoredRecord,
} from "../store/session_store.ts";
import { descendantIds } from "../store/session_tree.ts";
import { loadRecordStream } from "../store/record_stream.ts";
import { createLeased, DeferredCreationStore } from "../store/deferred_creation_store.ts";
import type { McpServerSpec } from "../mcp/mcp_declarations.ts";
import type { Tool } from "../tools/tool.ts";
import { ToolSet } from "../tools/tool_set.ts";
import type { Workspace } from "../tools/workspace.ts";
import { initialEffort, type Selection } from "./config_options.ts";
import { configEvent } from "./selection.ts";
import type { PermissionAsker } from "../permission/gate.ts";
import { Session, type SessionStart, SessionStateError } from "./session.ts";
import { copyForFork } from "./session_fork.ts";
import { SessionLifecycle, type SessionState } from "./session_state.ts";
import type { SessionCommands } from "../tools/session_commands.ts";
import { SessionDisposer } from "./session_disposer.ts";
import { type ReplaySink, replayThrough, ReplayWriter } from "./replay.ts";
import { type RestoredSession, SessionRestorer } from "./restore.ts";
import type { SessionServices } from "./session_services.ts";
import type { UpdateSink } from "./update_queue.ts";
import type { ClientQuestions } from "./elicitation_relay.ts";
import { askUserTool } from "../tools/ask_user.ts";
import { NOOP_TELEMETRY, type OpenHandle } from "../telemetry/telemetry.ts";
import { META_KEY } from "../util/meta_key.ts";
import type { WorktreeFrom } from "../git/worktree_from.ts";
import {
  addWorktree,
  findRepository,
  inWorktree,
  removeSessionWorktree,
  removeWorktree,
  restoreWorktree,
  worktreeGitPaths,
  type WorktreeHost,
  type WorktreeInfo,
  type WorktreeOwner,
} from "../git/worktree.ts";
import { GitError } from "../git/git_command.ts";
import { removeCheckpoints } from "./checkpoints.ts";
import { type Observation, replayKey } from "./observers.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";
import { OBSERVER_DETACHED_METHOD } from "./observer_limits.ts";

/** What a {@link SessionManager} needs: the server's shared services and its connection's parts. */
export interface SessionManagerOptions {
  /** What every session of the server shares (built once per server). */
  readonly services: SessionServices;
  /** The connection's logger. */
  readonly logger: Logger;
  /** Makes the update sink of one session. */
  readonly sinkFor: (sessionId: string) => UpdateSink;
  /**
   * Makes the sink of one session's `session/load` replay (the connection's, which may take
   * frames); without it the replay goes through {@link sinkFor}, one update at a time.
   */
  readonly replaySinkFor?: (sessionId: string) => ReplaySink;
  /** Makes the file and command access of one session. */
  readonly workspaceFor: (sessionId: string) => Workspace;
  /** Asks the client for permission. */
  readonly ask: PermissionAsker;
  /** What the client takes to be told of compactions (asked when a session opens). */
  readonly notices?: () => CompactionNotices;
  /**
   * How the client takes questions from tool calls (asked when a session opens).
   * @default {nobody can answer: no `ask_user`, MCP servers' questions declined}
   */
  readonly questions?: () => ClientQuestions;
  /** The tenant of the connection (its sessions' observers must be of it too). */
  readonly tenant?: string | undefined;
  /** Sends a notification to the connection's client (an observer's being dropped). */
  readonly notify?: (method: string, params: Record<string, unknown>) => void;
}

/** The questions of a client that takes none. */
const NO_QUESTIONS: ClientQuestions = { form: false, url: false };

/** Parameters of a new or reopened session, already validated and canonical. */
export interface CreateSessionOptions {
  readonly cwd: string;
  readonly additionalDirectories: readonly string[];
  /** Project instructions (the cwd's AGENTS.md). */
  readonly instructions?: string;
  /** The MCP servers the client gave for the session (validated), connected before it opens. */
  readonly mcpServers?: readonly McpServerSpec[];
  /**
   * Whether one MCP server that does not start fails the request (else the session opens
   * without it). @default {the server's `mcpStrict` setting}
   */
  readonly mcpStrict?: boolean;
  /** The session's own budgets (the client's), each at most the server's. */
  readonly budgets?: BudgetLimits;
  /** The session and tool call that started it (a delegating agent's), kept in its header. */
  readonly parent?: SessionParent;
  /**
   * The client's `_meta["acp-harness"].worktree` (new sessions and forks only): `false` refuses
   * a worktree; `true`, or where to make it from, asks for one and fails the request when none
   * can be made. @default {the server's `worktrees` setting, the cwd when there is no repository}
   */
  readonly worktree?: WorktreeRequest;
}

/** What a client asks of a new session's worktree: see {@link CreateSessionOptions.worktree}. */
export type WorktreeRequest = boolean | { readonly from: WorktreeFrom };

/** Where a session works: its roots (in its worktree, when it has one) and why it has none. */
interface Placed {
  readonly params: CreateSessionOptions;
  readonly worktree?: WorktreeInfo;
  readonly worktreeUnavailable?: string;
  /** Beyond the roots, where the session's sandboxed commands may write (its worktree's git). */
  readonly sandboxPaths?: readonly string[];
}

/** The refusal to delete `id` while `open` (itself or a descendant) is open on another connection. */
function openElsewhere(id: string, open: string): SessionLockedError {
  return new SessionLockedError(
    open === id
      ? `session ${id} is open on another connection of this server`
      : `session ${open}, started by session ${id} or one of its descendants, is open on ` +
        "another connection of this server",
  );
}

/** Options for {@link SessionManager.open}. */
export interface OpenSessionOptions extends Partial<CreateSessionOptions> {
  /** The canonical cwd the client gave; must match the stored one. */
  readonly cwd: string;
  /** Replay the conversation as updates before returning (`session/load`). */
  readonly replay: boolean;
}

export { SessionNotFoundError };

interface OpenSession {
  readonly session: Session;
  /** The lease; a new session's comes once the session is written (rejects when it failed). */
  readonly lease: Promise<SessionLease>;
  /** Releases what the session's tools hold; runs after the session closed. */
  readonly disposer: SessionDisposer;
  /** Counts the session as open until it is closed. */
  readonly counted: OpenHandle;
  closing?: Promise<void>;
}

/** A stored session being read back, in state `loading` until it opens. */
interface Loading {
  readonly lifecycle: SessionLifecycle;
  /** Settles once the open has (either way). */
  readonly settled: Promise<unknown>;
}

/** A session built but not yet registered, with what it owns. */
interface Built {
  readonly session: Session;
  readonly disposer: SessionDisposer;
}

/** A stored session built again, and whether its model had to fall back to the default. */
interface Reopened {
  readonly built: Built;
  readonly fellBack: boolean;
}

/** A session's tool set and commands, before the session is made. */
interface Equipment {
  readonly tools: ToolSet;
  readonly commands?: SessionCommands;
  /** The MCP servers that did not start (the session opened without them), as messages. */
  readonly mcpFailures?: readonly string[];
}

/**
 * The sessions of one connection. Each has its own prompt slot, controller and update queue, so
 * work in one never touches another. Sessions are recorded in the store and held with a lease,
 * so no other process can open them at the same time.
 */
export class SessionManager {
  readonly #options: SessionManagerOptions;
  readonly #sessions = new Map<string, OpenSession>();
  /**
   * Sessions being read back (`loading`) by id, with their open: a second load of the id is
   * refused, and a close or delete of it waits for the open to finish first.
   */
  readonly #loading = new Map<string, Loading>();
  #closing: Promise<void> | undefined;
  /** Aborted at shutdown: MCP servers still starting stop. */
  readonly #shutdown = new AbortController();
  /** The sessions of other connections this one observes, by id. */
  readonly #observing = new Map<string, Observation<Session>>();

  /** @param options Shared dependencies */
  constructor(options: SessionManagerOptions) {
    this.#options = options;
  }

  /** How many sessions are open. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * Opens and records a new session with the configured defaults.
   *
   * @param params Validated workspace roots
   * @returns The session
   * @throws {SessionStateError} Once the manager is closing
   */
  async create(params: CreateSessionOptions): Promise<Session> {
    this.#assertOpen();
    const { settings, catalog, now } = this.#options.services;
    const id = crypto.randomUUID();
    const effort = initialEffort(catalog.info(settings.model));
    const selection: Selection = {
      model: settings.model,
      mode: settings.mode,
      ...(effort === undefined ? {} : { effort }),
    };
    const placed = await this.#placed(id, params);
    try {
      // Tools first: a session whose MCP servers do not start is never recorded.
      const lifecycle = new SessionLifecycle(id, "creating");
      const built = await this.#build(id, placed, selection, lifecycle);
      const header: SessionHeader = {
        version: 1,
        id,
        cwd: params.cwd,
        additionalDirectories: params.additionalDirectories,
        createdAt: new Date(now()).toISOString(),
        ...(params.parent ? { parent: params.parent } : {}),
        ...(placed.worktree ? { worktree: placed.worktree } : {}),
      };
      // The initial selection is stored with the header: one write for a new session.
      const events = [configEvent(selection)];
      return await this.#written(built, header, events, { selectionStored: true });
    } catch (error) {
      await this.#dropWorktree(id, placed);
      throw error;
    }
  }

  /** Git and the file system, for worktrees. */
  get #git(): WorktreeHost {
    const { host } = this.#options.services;
    return { processes: host, files: host };
  }

  /**
   * Where a new session works: in a worktree of its own when the server gives sessions one (or
   * the client asks) and its cwd is in a git repository, else in its cwd (with the reason, when
   * one was wanted). A client that asked and cannot have one gets an error.
   *
   * @throws {SessionStateError} When the client asked for a worktree and none can be made
   */
  async #placed(id: string, params: CreateSessionOptions): Promise<Placed> {
    const { settings, dataDir } = this.#options.services;
    const asked = params.worktree;
    if (asked === false || (asked === undefined && !settings.worktrees)) return { params };
    const refuse = (reason: string): Placed => {
      if (asked !== undefined) {
        throw new SessionStateError(
          `_meta["${META_KEY}"].worktree: the session cannot have a worktree: ${reason}`,
        );
      }
      this.#options.logger.info("the session works in its cwd, without a worktree", {
        sessionId: id,
        cwd: params.cwd,
        reason,
      });
      return { params, worktreeUnavailable: reason };
    };
    if (dataDir === undefined) return refuse("the server has no data directory");
    const signal = this.#shutdown.signal;
    const repository = await findRepository(this.#git, params.cwd, signal);
    if ("reason" in repository) return refuse(repository.reason);
    let worktree: WorktreeInfo;
    try {
      worktree = await addWorktree(this.#git, {
        dataDir,
        sessionId: id,
        repository,
        cwd: params.cwd,
        from: typeof asked === "object" ? asked.from : settings.worktreeFrom,
        owner: this.#owner,
        signal,
      });
    } catch (error) {
      if (!(error instanceof GitError) || signal.aborted) throw error;
      this.#options.logger.warn("git could not make the session's worktree", {
        sessionId: id,
        error: error.message,
      });
      return refuse(`git could not make one: ${error.message}`);
    }
    this.#options.logger.info("the session works in a worktree", {
      sessionId: id,
      worktree: worktree.path,
      branch: worktree.branch,
    });
    const placed = inWorktreeRoots(worktree, params);
    // An additional directory git does not check out is made empty, as the cwd is.
    for (const dir of placed.additionalDirectories) {
      if (dir.startsWith(`${worktree.path}/`)) await this.#options.services.host.mkdir(dir);
    }
    return { params: placed, worktree, sandboxPaths: await this.#gitPaths(worktree) };
  }

  /** The worktree's git paths that exist (a sandbox binds only what is there). */
  async #gitPaths(worktree: WorktreeInfo): Promise<readonly string[]> {
    const { host } = this.#options.services;
    const paths = worktreeGitPaths(worktree);
    const found = await Promise.all(paths.map((path) => host.stat(path)));
    return paths.filter((_, index) => found[index]?.isDirectory);
  }

  /** This server, as worktree records name it for the reaper. */
  get #owner(): WorktreeOwner {
    const { host, storeName } = this.#options.services;
    return { pid: host.pid(), host: host.hostname(), store: storeName ?? "unnamed" };
  }

  /** Removes a worktree made for a session that then failed to open. */
  async #dropWorktree(id: string, placed: Placed): Promise<void> {
    if (!placed.worktree) return;
    await removeWorktree(this.#git, placed.worktree).catch((error: unknown) =>
      this.#options.logger.warn("cannot remove the worktree of a session that did not open", {
        sessionId: id,
        worktree: placed.worktree?.path,
        error,
      })
    );
  }

  /**
   * The worktree a stored session works in, made again from its branch when its directory is
   * gone but the repository is here.
   *
   * @throws {SessionStateError} When it is not on this machine (another server made it)
   */
  async #storedWorktree(id: string, worktree: WorktreeInfo): Promise<WorktreeInfo> {
    const signal = this.#shutdown.signal;
    if ((await this.#options.services.host.stat(worktree.path))?.isDirectory) return worktree;
    const { dataDir } = this.#options.services;
    const where = { owner: this.#owner, signal };
    if (
      dataDir !== undefined && await restoreWorktree(this.#git, worktree, { dataDir, ...where })
    ) {
      this.#options.logger.warn(
        "the session's worktree was gone: made again from its branch (uncommitted changes lost)",
        { sessionId: id, worktree: worktree.path, branch: worktree.branch },
      );
      return worktree;
    }
    throw new SessionStateError(
      `session ${id} works in the git worktree ${worktree.path} (branch ${worktree.branch}), ` +
        "which is not on this machine: open it on the server that made it",
    );
  }

  /**
   * Opens and records a fork of a stored session: a new session, with a new id and the given
   * roots, MCP servers and budgets, whose log starts with a copy of the source's records as the
   * store holds them (see {@link copyForFork}: a turn not ended is left out) and whose header
   * names the source (`forkedFrom`). The source is only read, never leased: it may be open and
   * running here or elsewhere, and stays as it is.
   *
   * @param sourceId The session to fork
   * @param params Validated workspace roots (and MCP servers, budgets) of the fork
   * @returns The fork, open
   * @throws {SessionNotFoundError} For an unknown source
   * @throws {SessionStateError} Once the manager is closing
   */
  async fork(sourceId: string, params: CreateSessionOptions): Promise<Session> {
    this.#assertOpen();
    const { store, now } = this.#options.services;
    const copy = await copyForFork(store, sourceId);
    if (!copy) throw new SessionNotFoundError(sourceId);
    const id = crypto.randomUUID();
    const header: SessionHeader = {
      version: 1,
      id,
      cwd: params.cwd,
      additionalDirectories: params.additionalDirectories,
      createdAt: new Date(now()).toISOString(),
      forkedFrom: { sessionId: sourceId, seq: copy.seq },
    };
    const placed = await this.#placed(id, params);
    try {
      const { equipment, disposer } = await this.#equipment(id, placed.params);
      let built: Built;
      let fellBack: boolean;
      try {
        const restored = await this.#restore(id, [copy.records], false);
        const chosen = this.#restoredSelection(id, restored.selection);
        fellBack = chosen.fellBack;
        const lifecycle = new SessionLifecycle(id, "creating");
        const session = this.#session(id, placed, chosen.selection, equipment, lifecycle, restored);
        built = { session, disposer };
      } catch (error) {
        await disposer.dispose();
        throw error;
      }
      const stored = placed.worktree ? { ...header, worktree: placed.worktree } : header;
      return await this.#written(built, stored, copy.events, { selectionChanged: fellBack });
    } catch (error) {
      await this.#dropWorktree(id, placed);
      throw error;
    }
  }

  /**
   * Writes a new session (its header and first events) with its lease, starts it and registers
   * it: with a {@link DeferredCreationStore}, the write happens once this task is done (after
   * the answer) and the session's prompts wait for it.
   */
  async #written(
    built: Built,
    header: SessionHeader,
    events: readonly StoredEvent[],
    start: SessionStart,
  ): Promise<Session> {
    const { store } = this.#options.services;
    if (store instanceof DeferredCreationStore) {
      const lease = store.createLeased(header, events);
      lease.catch((error: unknown) =>
        this.#options.logger.error("cannot create the session's log", {
          sessionId: header.id,
          error,
        })
      );
      built.session.start({ ...start, created: lease.then(() => {}) });
      return await this.#register(built, lease);
    }
    let lease: SessionLease;
    try {
      lease = await createLeased(store, header, events);
    } catch (error) {
      await built.disposer.dispose();
      throw error;
    }
    built.session.start(start);
    return await this.#register(built, Promise.resolve(lease));
  }

  /**
   * Reopens a stored session: restores its conversation, selection and grants, closes an
   * interrupted turn, and with `replay` sends the whole conversation as updates first.
   *
   * @param id The session id
   * @param params The client's cwd (must match) and optional roots
   * @returns The session
   * @throws {SessionNotFoundError} For an unknown id
   * @throws {SessionStateError} When it is open here or in another process, or the cwd differs
   */
  open(id: string, params: OpenSessionOptions): Promise<Session> {
    this.#assertOpen();
    if (this.stateOf(id) !== undefined) {
      throw new SessionStateError(`session ${id} is already open in this process`);
    }
    const lifecycle = new SessionLifecycle(id, "loading");
    const opening = this.#open(id, params, lifecycle).finally(() => this.#loading.delete(id));
    this.#loading.set(id, { lifecycle, settled: opening.catch(() => {}) });
    return opening;
  }

  /**
   * Attaches this connection, read-only, to a session another connection of this server owns:
   * replays its log (a running turn as it stands), then relays every update its owner is sent,
   * from the moment it attached, with nothing lost or shown twice in between (see
   * `Observation.live`). It never prompts, configures or is asked anything; its `close` detaches
   * it only, and it is dropped (told with `_acp-harness/observer_detached`) when the session
   * closes or when it falls too far behind.
   *
   * @param id The session id
   * @returns The owner's session, for the answer
   * @throws {SessionNotFoundError} For a session of another tenant
   * @throws {SessionStateError} When it is open on this connection, observed already, not open
   *   on this server, or has its most observers
   */
  async observe(id: string): Promise<Session> {
    this.#assertOpen();
    const { observers } = this.#options.services;
    if (this.stateOf(id) !== undefined) {
      throw new SessionStateError(`session ${id} is open on this connection: it owns it`);
    }
    if (this.#observing.has(id)) {
      throw new SessionStateError(`session ${id} is observed by this connection already`);
    }
    if (!observers) throw new SessionStateError("this server does not offer observing");
    const observation = observers.attach(id, this.#options.tenant, {
      sink: this.#options.sinkFor(id),
      detached: (reason, message) => {
        if (this.#observing.get(id) === observation) this.#observing.delete(id);
        this.#options.notify?.(OBSERVER_DETACHED_METHOD, { sessionId: id, reason, message });
      },
    });
    this.#observing.set(id, observation);
    try {
      const replayed = await this.#observerReplay(id);
      if (observation.gone) {
        throw new SessionStateError(`session ${id} was closed while its replay was written`);
      }
      observation.live(replayed);
    } catch (error) {
      observation.leave();
      if (this.#observing.get(id) === observation) this.#observing.delete(id);
      throw error;
    }
    return observation.observed.session;
  }

  /**
   * Whether this connection observes the session (read-only).
   *
   * @param id The session id
   * @returns Whether it does
   */
  observing(id: string): boolean {
    return this.#observing.has(id);
  }

  /**
   * Replays a session's log to this connection as it stands, an open turn as running (no
   * repair), and returns the keys of what it showed (see `replayKey`).
   */
  async #observerReplay(id: string): Promise<Set<string>> {
    const { attachments, store } = this.#options.services;
    const stream = await loadRecordStream(store, id);
    if (!stream) throw new SessionNotFoundError(id);
    const restorer = new SessionRestorer({
      attachments,
      logger: this.#options.logger,
      sessionId: id,
      replay: true,
      running: true,
      ...(this.#options.notices ? { notices: this.#options.notices() } : {}),
    });
    const writer = new ReplayWriter(this.#replaySink(id));
    const keys = new Set<string>();
    const write = async (updates: readonly SessionUpdate[]): Promise<void> => {
      for (const update of updates) {
        const key = replayKey(update);
        if (key !== undefined) keys.add(key);
      }
      await writer.write(updates);
    };
    try {
      for await (const records of stream.batches) await write(await restorer.add(records));
      await write(restorer.finish().updates);
      await writer.finish();
      return keys;
    } finally {
      await writer.settled();
      await stream.close();
    }
  }

  async #open(
    id: string,
    params: OpenSessionOptions,
    lifecycle: SessionLifecycle,
  ): Promise<Session> {
    let lease: SessionLease | undefined;
    try {
      const { store } = this.#options.services;
      try {
        lease = await store.acquire(id);
      } catch (error) {
        if (error instanceof SessionLockedError) throw new SessionStateError(error.message);
        throw error;
      }
      const stream = await loadRecordStream(store, id);
      if (!stream) throw new SessionNotFoundError(id);
      let reopened: Reopened;
      try {
        reopened = await this.#reopen(id, params, stream, lifecycle);
      } finally {
        // Lets go of the log (when the replay failed part-way) before the lease goes.
        await stream.close();
      }
      reopened.built.session.start({ selectionChanged: reopened.fellBack });
      const held = lease;
      lease = undefined;
      return await this.#register(reopened.built, Promise.resolve(held));
    } finally {
      await lease?.release();
    }
  }

  /**
   * Builds a stored session: its tools and MCP servers once the header says the cwd matches, then
   * its state from the records as they are read, replaying each batch (with `replay`) while the
   * next is read.
   */
  async #reopen(
    id: string,
    params: OpenSessionOptions,
    stream: SessionRecordStream,
    lifecycle: SessionLifecycle,
  ): Promise<Reopened> {
    const { header } = stream;
    if (header.cwd !== params.cwd) {
      throw new SessionStateError(
        `cwd: ${JSON.stringify(params.cwd)} does not match the session's cwd ${
          JSON.stringify(header.cwd)
        }`,
      );
    }
    const given: CreateSessionOptions = {
      cwd: header.cwd,
      additionalDirectories: params.additionalDirectories ?? header.additionalDirectories,
      ...(params.instructions ? { instructions: params.instructions } : {}),
      ...(params.mcpServers ? { mcpServers: params.mcpServers } : {}),
      ...(params.mcpStrict === undefined ? {} : { mcpStrict: params.mcpStrict }),
      ...(params.budgets ? { budgets: params.budgets } : {}),
    };
    const worktree = header.worktree && await this.#storedWorktree(id, header.worktree);
    const placed: Placed = worktree
      ? {
        params: inWorktreeRoots(worktree, given),
        worktree,
        sandboxPaths: await this.#gitPaths(worktree),
      }
      : { params: given };
    const { equipment, disposer } = await this.#equipment(id, placed.params);
    try {
      const restored = await this.#restore(id, stream.batches, params.replay);
      const { selection, fellBack } = this.#restoredSelection(id, restored.selection);
      const session = this.#session(id, placed, selection, equipment, lifecycle, restored);
      return { built: { session, disposer }, fellBack };
    } catch (error) {
      await disposer.dispose();
      throw error;
    }
  }

  /**
   * Restores a session from its records. With `replay`, each batch's updates go to the session's
   * replay sink while the next batches are read and restored (a few batches in flight).
   * Everything handed to the sink is written before this settles, failure included, so the
   * answer to the load follows it.
   */
  async #restore(
    id: string,
    batches: AsyncIterable<readonly StoredRecord[]> | Iterable<readonly StoredRecord[]>,
    replay: boolean,
  ): Promise<RestoredSession> {
    const { logger } = this.#options;
    const { attachments } = this.#options.services;
    const restorer = new SessionRestorer({
      attachments,
      logger,
      sessionId: id,
      replay,
      ...(this.#options.notices ? { notices: this.#options.notices() } : {}),
    });
    const writer = replay ? new ReplayWriter(this.#replaySink(id)) : undefined;
    try {
      for await (const records of batches) {
        const updates = await restorer.add(records);
        await writer?.write(updates);
      }
      const { restored, updates } = restorer.finish();
      await writer?.write(updates);
      await writer?.finish();
      return restored;
    } finally {
      await writer?.settled();
    }
  }

  /** Where a session's replay goes: the connection's sink, else the session's update sink. */
  #replaySink(id: string): ReplaySink {
    const { replaySinkFor, sinkFor, logger } = this.#options;
    return replaySinkFor ? replaySinkFor(id) : replayThrough(sinkFor(id), logger);
  }

  /** The stored selection, or the defaults when there is none; a model gone falls back too. */
  #restoredSelection(
    id: string,
    stored: Selection | undefined,
  ): { selection: Selection; fellBack: boolean } {
    const { logger } = this.#options;
    const { catalog, settings } = this.#options.services;
    const selection: Selection = stored ?? { model: settings.model, mode: settings.mode };
    if (catalog.info(selection.model)) return { selection, fellBack: false };
    logger.warn("the session's model is no longer available; using the default", {
      sessionId: id,
      model: selection.model,
    });
    const effort = initialEffort(catalog.info(settings.model));
    return {
      selection: {
        model: settings.model,
        mode: selection.mode as PermissionMode,
        ...(effort === undefined ? {} : { effort }),
      },
      fellBack: true,
    };
  }

  /**
   * Whether a session with this id is open here or stored (cheap: the store's index).
   *
   * @param id The session id
   * @returns Whether it exists
   */
  async exists(id: string): Promise<boolean> {
    if (this.stateOf(id) !== undefined) return true;
    return await this.#options.services.store.exists(id);
  }

  /**
   * Where the session with this id is in its lifecycle, when this manager has it: `loading`
   * while it is read back, then its own state until it is closed and let go.
   *
   * @param id The session id
   * @returns Its state, or undefined when it is not open here
   */
  stateOf(id: string): SessionState | undefined {
    return this.#loading.get(id)?.lifecycle.state ?? this.#sessions.get(id)?.session.state;
  }

  /** The open session with this id. */
  get(id: string): Session | undefined {
    return this.#sessions.get(id)?.session;
  }

  /**
   * Closes an open session: cancels its prompt, waits for it to settle, flushes, releases the
   * lease. Concurrent calls share one operation; an id that is not open is fine.
   *
   * @param id The session id
   */
  async close(id: string): Promise<void> {
    // An observer's close detaches it only.
    const observation = this.#observing.get(id);
    if (observation) {
      this.#observing.delete(id);
      observation.leave();
      return;
    }
    await this.#loading.get(id)?.settled;
    const open = this.#sessions.get(id);
    if (!open) return;
    open.closing ??= (async () => {
      try {
        await open.session.close();
      } finally {
        await open.disposer.dispose();
        await releaseLease(open.lease);
        this.#sessions.delete(id);
        this.#options.services.openSessions?.delete(id);
        this.#options.services.observers?.closed(id);
        open.counted.end();
      }
    })();
    return await open.closing;
  }

  /**
   * Removes a session and its descendants (the sessions it started, theirs, …) from the store,
   * closing those open here first. One open on another connection of this server stops the delete
   * before anything is removed, as does one another process holds (the store's refusal).
   *
   * @param id The session id; unknown ids are fine
   * @throws {SessionLockedError} The session or a descendant is open elsewhere
   */
  async delete(id: string): Promise<void> {
    const { store, openSessions } = this.#options.services;
    const here = (session: string): boolean =>
      this.#sessions.has(session) || this.#loading.has(session);
    // Nothing to do for an id that is neither open here nor stored (a malformed one included: a
    // lease could not even be asked for it).
    if (!here(id) && !openSessions?.has(id) && !await store.exists(id)) return;
    const ids = [id, ...await descendantIds(store, id)];
    const elsewhere = ids.find((session) => !here(session) && openSessions?.has(session));
    if (elsewhere !== undefined) throw openElsewhere(id, elsewhere);
    // The leases of the sessions not open here first: one another process holds stops the delete
    // before any session here is closed. The store's delete uses them (and releases them).
    const leases: SessionLease[] = [];
    try {
      for (const session of ids) if (!here(session)) leases.push(await store.acquire(session));
      await Promise.all(ids.filter(here).map((session) => this.close(session)));
      const still = ids.find((session) => openSessions?.has(session));
      if (still !== undefined) throw openElsewhere(id, still);
      await store.delete(id);
      await removeCheckpoints(this.#options.services, ids);
    } finally {
      await Promise.all(leases.map((lease) => lease.release()));
    }
    await this.#removeWorktrees(ids);
  }

  /** Removes the worktrees of deleted sessions (their branches too, unless not merged). */
  async #removeWorktrees(ids: readonly string[]): Promise<void> {
    const { dataDir } = this.#options.services;
    if (dataDir === undefined) return;
    for (const sessionId of ids) {
      try {
        const removed = await removeSessionWorktree(this.#git, dataDir, sessionId);
        if (!removed) continue;
        const { info, removal } = removed;
        this.#options.logger.info("removed the deleted session's worktree", {
          sessionId,
          worktree: info.path,
          branch: info.branch,
          ...(removal.branchKept ? { branchKept: removal.branchKept } : {}),
        });
      } catch (error) {
        this.#options.logger.warn("cannot remove the deleted session's worktree", {
          sessionId,
          error,
        });
      }
    }
  }

  /**
   * A page of stored sessions.
   *
   * @param options Filter, cursor and page size
   * @returns The page
   */
  list(options: ListOptions): Promise<SessionPage> {
    return this.#options.services.store.list(options);
  }

  /** Closes every session (cancelling turns, releasing leases). Idempotent. */
  closeAll(): Promise<void> {
    this.#closing ??= (async () => {
      this.#shutdown.abort(new Error("the server is shutting down"));
      for (const observation of this.#observing.values()) observation.leave();
      this.#observing.clear();
      // Opens in flight finish first; a session registered from now on is closed at once.
      await Promise.all([...this.#loading.values()].map((loading) => loading.settled));
      await Promise.all([...this.#sessions.keys()].map((id) => this.close(id)));
    })();
    return this.#closing;
  }

  #assertOpen(): void {
    if (this.#closing) throw new SessionStateError("the server is shutting down");
  }

  async #register(
    { session, disposer }: Built,
    lease: Promise<SessionLease>,
  ): Promise<Session> {
    if (this.#closing) {
      // Shutdown began while the session was being created or opened: do not leak it.
      try {
        await session.close();
      } finally {
        await disposer.dispose();
        await releaseLease(lease);
      }
      throw new SessionStateError("the server is shutting down");
    }
    const counted = (this.#options.services.telemetry ?? NOOP_TELEMETRY).sessionOpened();
    this.#sessions.set(session.id, { session, lease, disposer, counted });
    this.#options.services.openSessions?.add(session.id);
    this.#options.services.observers?.opened(session.id, {
      session,
      tenant: this.#options.tenant,
    });
    return session;
  }

  /** Makes the session's tool set and disposer, then the session. */
  async #build(
    id: string,
    placed: Placed,
    selection: Selection,
    lifecycle: SessionLifecycle,
  ): Promise<Built> {
    const { equipment, disposer } = await this.#equipment(id, placed.params);
    try {
      return { session: this.#session(id, placed, selection, equipment, lifecycle), disposer };
    } catch (error) {
      await disposer.dispose();
      throw error;
    }
  }

  /** Makes the session's tool set (its MCP servers started) and its disposer. */
  async #equipment(
    id: string,
    params: CreateSessionOptions,
  ): Promise<{ equipment: Equipment; disposer: SessionDisposer }> {
    const { logger } = this.#options;
    const { toolsFor } = this.#options.services;
    const disposer = new SessionDisposer((error) =>
      logger.warn("session clean-up failed", { sessionId: id, error })
    );
    try {
      const tools = await toolsFor({
        sessionId: id,
        cwd: params.cwd,
        additionalDirectories: params.additionalDirectories,
        disposer,
        logger,
      });
      return { equipment: await this.#equip(id, params, tools, disposer), disposer };
    } catch (error) {
      await disposer.dispose();
      throw error;
    }
  }

  /** The session's tool set, with its MCP servers connected (their tools in it). */
  async #equip(
    id: string,
    params: CreateSessionOptions,
    tools: readonly Tool[],
    disposer: SessionDisposer,
  ): Promise<Equipment> {
    const { logger } = this.#options;
    const { settings, host } = this.#options.services;
    const questions = this.#options.questions?.() ?? NO_QUESTIONS;
    const toolSet = ToolSet.of(tools, { logger, logFields: { sessionId: id } });
    // Offered only where someone can answer: never in a headless run.
    if (questions.form && questions.ask) toolSet.add({ id: "ask_user", tools: [askUserTool] });
    const servers = withOperatorServers(settings.mcpServers ?? [], params.mcpServers ?? []);
    if (servers.length === 0) return { tools: toolSet };
    // Loaded only now: sessions without MCP servers never load the MCP client.
    const { McpHub } = await import("../mcp/mcp_hub.ts");
    const hub = await McpHub.connect({
      servers,
      // `--sandbox-children`: the servers run in the command sandbox, the session's roots theirs.
      processes: sandboxedProcesses(host, this.#options.services.sandbox, {
        roots: [params.cwd, ...params.additionalDirectories],
      }),
      cwd: params.cwd,
      logger,
      logFields: { sessionId: id },
      startTimeoutMs: settings.mcpStartTimeoutMs,
      callTimeoutMs: settings.mcpCallTimeoutMs,
      elicitation: {
        url: questions.url && questions.ask !== undefined,
        ...(questions.complete ? { complete: questions.complete } : {}),
      },
      signal: this.#shutdown.signal,
      strict: params.mcpStrict ?? settings.mcpStrict,
      ...(this.#options.services.telemetry ? { telemetry: this.#options.services.telemetry } : {}),
      // Bare program names (`npx`) are looked up on this process's PATH, never the declared env's.
      programs: { path: host.env("PATH"), stat: (path) => host.stat(path) },
    });
    disposer.defer(() => hub.close());
    hub.attach(toolSet);
    const mcpFailures = hub.failures.map((failure) => failure.message);
    for (const failure of hub.failures) {
      logger.warn("session opened without an MCP server that did not start", {
        sessionId: id,
        server: failure.server,
        error: failure.message,
      });
    }
    return { tools: toolSet, commands: hub, ...(mcpFailures.length > 0 ? { mcpFailures } : {}) };
  }

  #session(
    id: string,
    { params, worktree, worktreeUnavailable, sandboxPaths }: Placed,
    selection: Selection,
    equipment: Equipment,
    lifecycle: SessionLifecycle,
    restored?: RestoredSession,
  ): Session {
    const { services, logger, sinkFor, workspaceFor, ask } = this.#options;
    const elicit = this.#options.questions?.().ask;
    return new Session({
      services,
      id,
      cwd: params.cwd,
      additionalDirectories: params.additionalDirectories,
      selection,
      tools: equipment.tools,
      ...(equipment.commands ? { commands: equipment.commands } : {}),
      ...(equipment.mcpFailures ? { mcpFailures: equipment.mcpFailures } : {}),
      ...(worktree ? { worktree } : {}),
      ...(worktreeUnavailable ? { worktreeUnavailable } : {}),
      ...(sandboxPaths?.length ? { sandboxPaths } : {}),
      workspace: workspaceFor(id),
      ask,
      ...(elicit ? { elicit } : {}),
      ...(params.instructions ? { instructions: params.instructions } : {}),
      ...budgetsOf(params, restored),
      ...(this.#options.notices ? { notices: this.#options.notices() } : {}),
      sink: services.observers ? services.observers.tap(id, sinkFor(id)) : sinkFor(id),
      logger,
      ...(restored ? { restored } : {}),
    }, lifecycle);
  }
}

/** Gives a lease back; one that was never taken (its session's creation failed) is fine. */
async function releaseLease(lease: Promise<SessionLease>): Promise<void> {
  const held = await lease.catch(() => undefined);
  await held?.release();
}

/**
 * The operator's MCP servers (config `mcpServers`) and the client's, the operator's first; a
 * client's entry replaces the operator's of the same (normalized) name.
 *
 * @param operator The config file's servers
 * @param client The request's servers
 * @returns The servers the session starts
 */
export function withOperatorServers(
  operator: readonly McpServerSpec[],
  client: readonly McpServerSpec[],
): readonly McpServerSpec[] {
  if (operator.length === 0) return client;
  const names = new Set(client.map((server) => server.name));
  return [...operator.filter((server) => !names.has(server.name)), ...client];
}

/** The roots of a session in its worktree: the cwd and the additional directories inside it. */
function inWorktreeRoots(
  worktree: WorktreeInfo,
  params: CreateSessionOptions,
): CreateSessionOptions {
  return {
    ...params,
    cwd: worktree.cwd,
    additionalDirectories: params.additionalDirectories.map((dir) => inWorktree(worktree, dir)),
  };
}

/** A session's own budgets: the client's of this request, else those it recorded. */
function budgetsOf(
  params: CreateSessionOptions,
  restored: RestoredSession | undefined,
): { budgets?: BudgetLimits } {
  const budgets = params.budgets ?? restored?.budgets;
  return budgets ? { budgets } : {};
}
