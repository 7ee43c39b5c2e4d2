/**
 * What every session of a server shares: its settings and the services its sessions run on,
 * built once per server and handed by reference to each session manager, session and turn, so
 * that a new shared dependency is one field here.
 *
 * @module
 */
import type { TurnServices, TurnSettings } from "../agent/run_turn.ts";
import type { PermissionMode } from "../permission/mode.ts";
import type { PermissionRules } from "../permission/rules.ts";
import type { Host } from "../host/host.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import type { AttachmentStore, SessionStore } from "../store/session_store.ts";
import type { ToolSetFactory } from "./tool_set_factory.ts";
import type { CommandSandbox } from "../sandbox/command_sandbox.ts";
import type { McpServerSpec } from "../mcp/mcp_declarations.ts";
import type { Telemetry } from "../telemetry/telemetry.ts";
import type { WorktreeFrom } from "../git/worktree_from.ts";
import type { ObserverRegistry } from "./observers.ts";
import type { Session } from "./session.ts";

/** The settings sessions read, fixed for a server's life; times in ms. */
export interface SessionSettings extends TurnSettings {
  /** Default model id for new sessions (and for a session whose model is gone). @default {"echo"} */
  readonly model: string;
  /** Permission mode of new sessions. @default {"ask"} */
  readonly mode: PermissionMode;
  /**
   * The share of the model's context window at which a session's conversation is compacted
   * before the next model request. @default {0.8}
   */
  readonly compactThreshold: number;
  /**
   * How long a prompt's answer (or a tool about to run) waits for the store to confirm the
   * session's records before the prompt fails, in ms. @default {30_000}
   */
  readonly storeCommitTimeoutMs: number;
  /** How long an MCP server has to start and list its tools, in ms. @default {30_000} */
  readonly mcpStartTimeoutMs: number;
  /** How long one MCP tool call may take, in ms. @default {300_000} */
  readonly mcpCallTimeoutMs: number;
  /**
   * Whether one MCP server that does not start fails the request (else the session opens
   * without it), unless the request says. @default {false}
   */
  readonly mcpStrict: boolean;
  /**
   * The operator's MCP servers (config `mcpServers`), started for every session beside the
   * client's; the client's entry wins on a name clash. @default {none}
   */
  readonly mcpServers?: readonly McpServerSpec[];
  /**
   * The permission rules (`--allow`, `--deny`, `--ask`), checked before the mode: see
   * src/permission/rules.ts. @default {no rules}
   */
  readonly permissionRules?: PermissionRules;
  /**
   * Most prompts of one session waiting while its turn runs (`--prompt-queue`); 0 refuses a
   * prompt while one runs. @default {8}
   */
  readonly promptQueue: number;
  /**
   * Whether a new session in a git repository gets a worktree of its own (`--worktrees`), unless
   * it says otherwise. @default {false}
   */
  readonly worktrees: boolean;
  /** What a new worktree holds (`--worktree-from`). @default {"head"} */
  readonly worktreeFrom: WorktreeFrom;
  /** Whether turns take checkpoints of the roots (`--checkpoints`; needs `dataDir`). @default {true} */
  readonly checkpoints?: boolean;
  /** Largest file a checkpoint records, in bytes (`--checkpoint-max-file-size`). @default {1048576} */
  readonly checkpointMaxFileSize?: number;
}

/** The shared parts every session of a server runs on (see the module doc). */
export interface SessionServices extends TurnServices {
  readonly settings: SessionSettings;
  /** The models offered and their providers. */
  readonly catalog: ModelCatalog;
  /** The operating system (its processes run MCP servers; tools get its file queries only). */
  readonly host: Host;
  /** The clock, in ms since the epoch. */
  readonly now: () => number;
  /** Where sessions are recorded. */
  readonly store: SessionStore;
  /** Where prompt images are kept. */
  readonly attachments: AttachmentStore;
  /** Makes the tool set of each session. */
  readonly toolsFor: ToolSetFactory;
  /**
   * The sandbox of the sessions' commands (`run_command`), at the server's level; a session may
   * choose a tighter one (its `sandbox` option). Absent: commands run unconfined.
   */
  readonly sandbox?: CommandSandbox | undefined;
  /**
   * The ids of the sessions open on any connection of the server, shared by their managers: a
   * session open on another connection is not deleted from under it.
   */
  readonly openSessions?: Set<string> | undefined;
  /**
   * The sessions open on the server's connections with their read-only observers, shared by
   * their managers. Absent: sessions cannot be observed.
   */
  readonly observers?: ObserverRegistry<Session> | undefined;
  /**
   * Runs a task once the work of the current event-loop task is done (`setImmediate`): given,
   * a session's records and updates are handed over together once per task (see `Outbox`).
   */
  readonly defer?: ((task: () => void) => void) | undefined;
  /**
   * Where the sessions' turns, model requests, tool calls, permission decisions, store commits
   * and MCP server starts are counted. Absent: nothing is (`NOOP_TELEMETRY`).
   */
  readonly telemetry?: Telemetry | undefined;
  /**
   * The server's data directory, where sessions' worktrees (`worktrees/<id>`) and checkpoints
   * (`checkpoints/<id>`) are kept. Absent: sessions get neither.
   */
  readonly dataDir?: string | undefined;
  /**
   * Where the sessions are recorded, in words (the store's description): worktree records carry
   * it, so that a server's reaper leaves alone the worktrees of another store's sessions.
   */
  readonly storeName?: string | undefined;
}
