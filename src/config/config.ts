/**
 * The server's settings. Each one is described once, in {@link SETTINGS}: its flag, environment
 * variable, config-file key, default, how its value is read and its `--help` line. The readers
 * (`configFromEnv`, `configFromFile` here, `parseArgs` in `./args.ts`), `mergeConfig`,
 * `DEFAULT_CONFIG` and `USAGE` (`./usage.ts`) all derive from that table.
 *
 * @module
 */

import type { ModelFacts } from "../llm/presets.ts";
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from "../log/logger.ts";
import { PERMISSION_MODES, type PermissionMode } from "../permission/mode.ts";
import type { PermissionRule } from "../permission/rule_syntax.ts";
import { SANDBOX_LEVELS, type SandboxLevel } from "../sandbox/sandbox.ts";
import { WORKTREE_FROM, type WorktreeFrom } from "../git/worktree_from.ts";
import { nearestWord } from "../util/nearest_word.ts";
import {
  type AgentConfig,
  AGENTS_SECTION,
  BOOLEAN,
  BOOLEAN_WORDS,
  ConfigError,
  MODELS_SECTION,
  NON_EMPTY_STRING,
  NON_NEGATIVE_INTEGER,
  NON_NEGATIVE_NUMBER,
  oneOf,
  PORT,
  POSITIVE_INTEGER,
  type ProviderConfig,
  PROVIDERS_SECTION,
  SHARE,
  STRING_LIST,
  type ValueType,
} from "./value_types.ts";
import { addRules, ruleList } from "./rule_list.ts";

export { type AgentConfig, BOOLEAN_WORDS, ConfigError, type ProviderConfig, type ValueType };

// The modes are the permission layer's; the settings' public surface names them too.
export { PERMISSION_MODES, type PermissionMode };

/** The server's settings, from flags, environment and config file. */
export interface Config {
  /** Default model id for new sessions. @default {"echo"} */
  readonly model: string;
  /** Default permission mode. @default {"ask"} */
  readonly mode: PermissionMode;
  /** Relay deltas as they arrive instead of committed steps. @default {false} */
  readonly stream: boolean;
  /** Data directory; `undefined` means `~/.acp-harness`. */
  readonly dataDir: string | undefined;
  /**
   * Where sessions are stored: a `postgres://` or `postgresql://` URL selects PostgreSQL; anything
   * else, or `undefined`, keeps JSONL files in the data directory (a path here is that directory).
   */
  readonly store: string | undefined;
  /** Seconds a PostgreSQL session lease lives without a heartbeat. @default {30} */
  readonly leaseTtl: number;
  /**
   * Seconds a prompt's answer (or a tool about to run) waits for the store to confirm the
   * session's records before the prompt fails. @default {30}
   */
  readonly storeCommitTimeout: number;
  /** The config file that was read, if any. */
  readonly configFile: string | undefined;
  /** Least severe level logged to stderr. @default {"warn"} */
  readonly logLevel: LogLevel;
  /** How log lines are written. @default {"text"} */
  readonly logFormat: LogFormat;
  /**
   * The port of 127.0.0.1 that serves Prometheus metrics at `/metrics` (0 picks a free one);
   * `undefined`: metrics are off.
   */
  readonly metricsPort: number | undefined;
  /** The address the metrics listener binds; beyond loopback it needs a token. @default {"127.0.0.1"} */
  readonly metricsHost: string;
  /**
   * OpenTelemetry traces: on, off, or (`undefined`) on when `OTEL_EXPORTER_OTLP_ENDPOINT` or
   * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set.
   */
  readonly otel: boolean | undefined;
  /** Script file for the `scripted` model. */
  readonly script: string | undefined;
  /** Most model requests in one turn. @default {50} */
  readonly maxSteps: number;
  /** Most tool calls in one turn (one refused permission counts); 0 is no limit. @default {0} */
  readonly maxToolCalls: number;
  /** Seconds a turn may run; 0 is no limit. @default {0} */
  readonly turnTimeout: number;
  /** Most prompts of a session waiting while one runs; 0 refuses them. @default {8} */
  readonly promptQueue: number;
  /** Whether turns take checkpoints of the files (`/undo`). @default {true} */
  readonly checkpoints: boolean;
  /** Largest file a checkpoint records, in bytes. @default {1048576} */
  readonly checkpointMaxFileSize: number;
  /** Most tokens (input plus output) a session may spend; 0 is no limit. @default {0} */
  readonly maxSessionTokens: number;
  /** Most a session may cost in USD (needs a priced model); 0 is no limit. @default {0} */
  readonly maxSessionCost: number;
  /**
   * The share of the model's context window at which a session's conversation is compacted
   * before the next model request. @default {0.8}
   */
  readonly compactThreshold: number;
  /** Seconds a permission request waits for the client's answer before refusing. @default {300} */
  readonly permissionTimeout: number;
  /** Seconds an MCP server has to start and list its tools. @default {30} */
  readonly mcpStartTimeout: number;
  /**
   * Whether one MCP server that does not start fails the request (else the session opens
   * without it). @default {false}
   */
  readonly mcpStrict: boolean;
  /** Seconds one MCP tool call may take. @default {300} */
  readonly mcpCallTimeout: number;
  /**
   * Whether a session in a git repository works in a worktree of its own (`--worktrees`).
   * @default {false}
   */
  readonly worktrees: boolean;
  /** What a new worktree holds: the checkout's `HEAD`, or its working tree. @default {"head"} */
  readonly worktreeFrom: WorktreeFrom;
  /** Largest inbound JSON-RPC message in bytes. @default {33554432} */
  readonly maxMessageBytes: number;
  /**
   * Most requests of one connection being handled at once: past it the connection stops reading
   * its input until one is answered (a running prompt counts until its turn starts). @default {64}
   */
  readonly maxRequestsInFlight: number;
  /** Sessions per `session/list` page. @default {100} */
  readonly sessionListPageSize: number;
  /**
   * Directories sessions may be opened in (`cwd` and additional directories must lie inside one);
   * `undefined` allows any. Required for HTTP beyond loopback.
   */
  readonly allowedRoots: readonly string[] | undefined;
  /** Serve ACP over HTTP and WebSocket instead of stdio. @default {false} */
  readonly http: boolean;
  /** The address the HTTP server binds. @default {"127.0.0.1"} */
  readonly host: string;
  /** The HTTP port; 0 picks a free one. @default {7337} */
  readonly port: number;
  /** The bearer token HTTP clients must send; required to bind beyond loopback. */
  readonly token: string | undefined;
  /** A file holding the bearer token (its first line). */
  readonly tokenFile: string | undefined;
  /** HTTP: the tenants file (JSON; reloaded on SIGHUP); replaces the single token. */
  readonly tenants: string | undefined;
  /** Origins whose browsers may call the HTTP server (`*` for any). @default {[]} */
  readonly allowedOrigins: readonly string[];
  /** Most HTTP and WebSocket connections open at once. @default {1000} */
  readonly maxConnections: number;
  /** Most HTTP and WebSocket connections open at once from one peer address. @default {100} */
  readonly maxConnectionsPerAddress: number;
  /** Most sessions one HTTP or WebSocket connection may have open. @default {256} */
  readonly maxSessionsPerConnection: number;
  /** Output bytes an HTTP connection holds for a reader that is not reading. @default {16 MiB} */
  readonly maxBufferedBytes: number;
  /** Seconds a full buffer may wait for its reader before the connection is closed. @default {60} */
  readonly stallTimeout: number;
  /** Seconds an HTTP connection may stay silent with nothing running before it is closed. @default {600} */
  readonly idleTimeout: number;
  /** Seconds an HTTP request body may take to arrive in full. @default {60} */
  readonly bodyTimeout: number;
  /** Seconds a new HTTP socket has to send complete request headers before it is closed. @default {10} */
  readonly headerTimeout: number;
  /** Most HTTP sockets open at once, before any parsing (within the descriptor limit). @default {4096} */
  readonly maxSockets: number;
  /** Most HTTP sockets of one peer address still sending their request headers. @default {256} */
  readonly maxSocketsPerAddress: number;
  /**
   * Providers from the config file, by id (they override built-in ones of the same id).
   * @default {{}}
   */
  readonly providers: Readonly<Record<string, ProviderConfig>>;
  /** Model facts from the config file, by full model id. @default {{}} */
  readonly models: Readonly<Record<string, ModelFacts>>;
  /** ACP agents the `delegate` tool can start, by name (config file only). @default {{}} */
  readonly agents: Readonly<Record<string, AgentConfig>>;
  /**
   * MCP servers started for every session, in `session/new`'s `mcpServers` shape (config file
   * only; checked entry by entry when the server starts). @default {[]}
   */
  readonly mcpServers: readonly unknown[];
  /**
   * How many levels of delegation may run below the top-level server: a server at that depth
   * (told by its parent through `ACP_HARNESS_DELEGATION_DEPTH`) offers no `delegate` tool.
   * @default {1}
   */
  readonly maxDelegationDepth: number;
  /**
   * Permission rules that let the tool calls they match run (`--allow`, repeatable; config
   * `permissions.allow`); flags, variable and file add up. @default {[]}
   */
  readonly allow: readonly PermissionRule[];
  /** Permission rules that refuse the tool calls they match (`--deny`). @default {[]} */
  readonly deny: readonly PermissionRule[];
  /** Permission rules that ask before the tool calls they match run (`--ask`). @default {[]} */
  readonly ask: readonly PermissionRule[];
  /**
   * The sandbox of the agent's commands: `off`, `read-only` or `workspace-write`; `undefined`
   * is `workspace-write` where bubblewrap works, else `off` with a warning.
   */
  readonly sandbox: SandboxLevel | undefined;
  /** Whether sandboxed commands may reach the network. @default {false} */
  readonly sandboxNetwork: boolean;
  /** Whether MCP stdio servers and delegated agents run in the sandbox too. @default {false} */
  readonly sandboxChildren: boolean;
  /** The most processes one sandboxed command may have at once. @default {1024} */
  readonly sandboxPids: number;
  /** A cassette directory every provider exchange is recorded to (`--record`). */
  readonly record: string | undefined;
  /** A cassette directory providers are answered from, never the network (`--replay`). */
  readonly replay: string | undefined;
  /** Replayed answers at their recorded timing or at once. @default {"instant"} */
  readonly replaySpeed: "recorded" | "instant";
  /** With `--replay`: a request that matches nothing is sent and recorded into the cassette. @default {false} */
  readonly recordMissing: boolean;
}

// ---------------------------------------------------------------------------------------------
// The settings table.

/** One setting: where its value can come from, how it is read, its default and its help. */
export interface Setting<V> {
  /** Its command-line flag, `--max-steps`; absent when no flag sets it. */
  readonly flag?: string;
  /** The flag's value in the usage text: `<n>`. */
  readonly placeholder?: string;
  /**
   * The value of the flag given without `=<value>`; a flag with one never takes the next
   * argument as its value (`--stream` means `--stream=true`).
   */
  readonly bare?: V;
  /** Its environment variable; absent when none sets it. */
  readonly env?: string;
  /** Its key in the config file; absent when the file cannot set it. */
  readonly fileKey?: string;
  /** Its value when no source gives one. */
  readonly default: V;
  /** How `--help` and the README show the default, when `String(default)` will not do. */
  readonly shownDefault?: string;
  /** What it means; the `--help` line of a setting with a flag. */
  readonly help: string;
  /** A further `--help` line, after the env variable and the default. */
  readonly note?: string;
  /** How its value is read. */
  readonly type: ValueType<V>;
  /**
   * How a value combines with the value of a lower source (or of the same flag given before);
   * absent: the higher value replaces the lower.
   */
  merge?(lower: V, higher: V): V;
}

/** A config-file array whose entries a later layer checks (`mcpServers`). */
const JSON_ARRAY: ValueType<readonly unknown[]> = {
  fromJson: (json, key) => {
    if (!Array.isArray(json)) throw new ConfigError(`"${key}" must be an array`);
    return Object.freeze([...json]);
  },
};

/** One {@link Setting} per field of {@link Config}. */
export type SettingsTable = { readonly [K in keyof Config]: Setting<Config[K]> };

/**
 * Every setting, in the order of the usage text. Flags, environment variables, config-file keys,
 * validation, defaults and the `--help` text all derive from this table.
 */
export const SETTINGS: SettingsTable = {
  model: {
    flag: "--model",
    placeholder: "<id>",
    env: "ACP_HARNESS_MODEL",
    fileKey: "model",
    default: "echo",
    help: "Default model for new sessions",
    type: NON_EMPTY_STRING,
  },
  mode: {
    flag: "--mode",
    placeholder: "<mode>",
    env: "ACP_HARNESS_MODE",
    fileKey: "mode",
    default: "ask",
    help: "ask, auto or read-only",
    type: oneOf(PERMISSION_MODES),
  },
  stream: {
    flag: "--stream",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_STREAM",
    fileKey: "stream",
    default: false,
    help: "Relay model output as it arrives",
    note: `<bool> is ${BOOLEAN_WORDS.join(", ")} (any case)`,
    type: BOOLEAN,
  },
  script: {
    flag: "--script",
    placeholder: "<file>",
    env: "ACP_HARNESS_SCRIPT",
    fileKey: "script",
    default: undefined,
    help: 'Script file for the offline "scripted" model',
    type: NON_EMPTY_STRING,
  },
  maxSteps: {
    flag: "--max-steps",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_STEPS",
    fileKey: "maxSteps",
    default: 50,
    help: "Most model requests in one turn",
    type: POSITIVE_INTEGER,
  },
  maxToolCalls: {
    flag: "--max-tool-calls",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_TOOL_CALLS",
    fileKey: "maxToolCalls",
    default: 0,
    help: "Most tool calls in one turn, refused ones too (0: no limit)",
    type: NON_NEGATIVE_INTEGER,
  },
  turnTimeout: {
    flag: "--turn-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_TURN_TIMEOUT",
    fileKey: "turnTimeout",
    default: 0,
    help: "Seconds a turn may run; then what runs is cancelled and the turn ends (0: no limit)",
    type: NON_NEGATIVE_INTEGER,
  },
  promptQueue: {
    flag: "--prompt-queue",
    placeholder: "<n>",
    env: "ACP_HARNESS_PROMPT_QUEUE",
    fileKey: "promptQueue",
    default: 8,
    help: "Most prompts of a session queued while one runs (0: a prompt while one runs is refused)",
    type: NON_NEGATIVE_INTEGER,
  },
  checkpoints: {
    flag: "--checkpoints",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_CHECKPOINTS",
    fileKey: "checkpoints",
    default: true,
    help: "Take a checkpoint of the files before each turn's first change (/undo, /restore N)",
    type: BOOLEAN,
  },
  checkpointMaxFileSize: {
    flag: "--checkpoint-max-file-size",
    placeholder: "<n>",
    env: "ACP_HARNESS_CHECKPOINT_MAX_FILE_SIZE",
    fileKey: "checkpointMaxFileSize",
    default: 1_048_576,
    help: "Largest file a checkpoint records (larger ones are neither recorded nor restored)",
    type: POSITIVE_INTEGER,
  },
  maxSessionTokens: {
    flag: "--max-session-tokens",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_SESSION_TOKENS",
    fileKey: "maxSessionTokens",
    default: 0,
    help: "Most tokens (input plus output) one session may spend, across restarts (0: no limit)",
    type: NON_NEGATIVE_INTEGER,
  },
  maxSessionCost: {
    flag: "--max-session-cost",
    placeholder: "<usd>",
    env: "ACP_HARNESS_MAX_SESSION_COST",
    fileKey: "maxSessionCost",
    default: 0,
    help: "Most USD one session may cost, across restarts; needs a priced model (0: no limit)",
    type: NON_NEGATIVE_NUMBER,
  },
  compactThreshold: {
    flag: "--compact-threshold",
    placeholder: "<share>",
    env: "ACP_HARNESS_COMPACT_THRESHOLD",
    fileKey: "compactThreshold",
    default: 0.8,
    help: "Compact the conversation when a request would fill this share of the context window",
    note: "at 1, only when the window is full or the provider says the context is too long",
    type: SHARE,
  },
  permissionTimeout: {
    flag: "--permission-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_PERMISSION_TIMEOUT",
    fileKey: "permissionTimeout",
    default: 300,
    help: "Seconds to wait for a permission answer before refusing",
    type: POSITIVE_INTEGER,
  },
  mcpStartTimeout: {
    flag: "--mcp-start-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_MCP_START_TIMEOUT",
    fileKey: "mcpStartTimeout",
    default: 30,
    help: "Seconds an MCP server has to start and list its tools",
    type: POSITIVE_INTEGER,
  },
  worktrees: {
    flag: "--worktrees",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_WORKTREES",
    fileKey: "worktrees",
    default: false,
    help: "Give each session in a git repository its own worktree and branch (under --data-dir)",
    note: 'a session asks for or refuses one with _meta["acp-harness"].worktree',
    type: BOOLEAN,
  },
  worktreeFrom: {
    flag: "--worktree-from",
    placeholder: "<from>",
    env: "ACP_HARNESS_WORKTREE_FROM",
    fileKey: "worktreeFrom",
    default: "head",
    help:
      "What a new worktree holds: head (the last commit) or working-tree (with uncommitted changes)",
    type: oneOf(WORKTREE_FROM),
  },
  mcpStrict: {
    flag: "--mcp-strict",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_MCP_STRICT",
    fileKey: "mcpStrict",
    default: false,
    help: "Fail session/new, load and resume when one of their MCP servers does not start",
    note: "off: the session opens without it, with a warning and a notice",
    type: BOOLEAN,
  },
  mcpCallTimeout: {
    flag: "--mcp-call-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_MCP_CALL_TIMEOUT",
    fileKey: "mcpCallTimeout",
    default: 300,
    help: "Seconds one MCP tool call may take",
    type: POSITIVE_INTEGER,
  },
  maxMessageBytes: {
    flag: "--max-message-bytes",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_MESSAGE_BYTES",
    fileKey: "maxMessageBytes",
    default: 32 * 1024 * 1024,
    shownDefault: "32 MiB",
    help: "Inbound message limit",
    type: POSITIVE_INTEGER,
  },
  maxRequestsInFlight: {
    flag: "--max-requests-in-flight",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_REQUESTS_IN_FLIGHT",
    fileKey: "maxRequestsInFlight",
    default: 64,
    help: "Most requests of one connection handled at once; then its input waits",
    type: POSITIVE_INTEGER,
  },
  dataDir: {
    flag: "--data-dir",
    placeholder: "<dir>",
    env: "ACP_HARNESS_HOME",
    fileKey: "dataDir",
    default: undefined,
    shownDefault: "~/.acp-harness",
    help: "Data directory",
    type: NON_EMPTY_STRING,
  },
  store: {
    flag: "--store",
    placeholder: "<url-or-dir>",
    env: "ACP_HARNESS_STORE",
    fileKey: "store",
    default: undefined,
    shownDefault: "JSONL in --data-dir",
    help: "Session store: a postgres:// URL, memory: (this process only), or a JSONL directory",
    type: NON_EMPTY_STRING,
  },
  leaseTtl: {
    flag: "--lease-ttl",
    placeholder: "<s>",
    env: "ACP_HARNESS_LEASE_TTL",
    fileKey: "leaseTtl",
    default: 30,
    help: "PostgreSQL: seconds a session lease outlives its holder's last heartbeat",
    type: POSITIVE_INTEGER,
  },
  storeCommitTimeout: {
    flag: "--store-commit-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_STORE_COMMIT_TIMEOUT",
    fileKey: "storeCommitTimeout",
    default: 30,
    help: "Seconds an answer waits for the store to confirm the turn's records before it fails",
    type: POSITIVE_INTEGER,
  },
  configFile: {
    flag: "--config",
    placeholder: "<file>",
    env: "ACP_HARNESS_CONFIG",
    default: undefined,
    help: "JSON config file",
    type: NON_EMPTY_STRING,
  },
  logLevel: {
    flag: "--log-level",
    placeholder: "<level>",
    env: "ACP_HARNESS_LOG_LEVEL",
    fileKey: "logLevel",
    default: "warn",
    help: "error, warn, info or debug",
    type: oneOf(LOG_LEVELS),
  },
  logFormat: {
    flag: "--log-format",
    placeholder: "<format>",
    env: "ACP_HARNESS_LOG_FORMAT",
    fileKey: "logFormat",
    default: "text",
    help: "text, or json (one object a line: time, level, message, fields)",
    note: "text lines start with the time when stderr is not a terminal",
    type: oneOf(LOG_FORMATS),
  },
  metricsPort: {
    flag: "--metrics-port",
    placeholder: "<n>",
    env: "ACP_HARNESS_METRICS_PORT",
    fileKey: "metricsPort",
    default: undefined,
    shownDefault: "off",
    help: "serve Prometheus metrics on <metrics-host>:<n>/metrics (0 picks a free port)",
    note: "with --http also /metrics on the main listener, behind the token",
    type: PORT,
  },
  metricsHost: {
    flag: "--metrics-host",
    placeholder: "<addr>",
    env: "ACP_HARNESS_METRICS_HOST",
    fileKey: "metricsHost",
    default: "127.0.0.1",
    help: "address the metrics listener binds (beyond loopback it needs a token)",
    type: NON_EMPTY_STRING,
  },
  otel: {
    flag: "--otel",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_OTEL",
    fileKey: "otel",
    default: undefined,
    shownDefault: "when OTEL_EXPORTER_OTLP_ENDPOINT is set",
    help: "export OpenTelemetry traces over OTLP/HTTP (the OTEL_* variables configure it)",
    note: "OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off",
    type: BOOLEAN,
  },
  allowedRoots: {
    flag: "--allowed-roots",
    placeholder: "<dirs>",
    env: "ACP_HARNESS_ALLOWED_ROOTS",
    fileKey: "allowedRoots",
    default: undefined,
    shownDefault: "any directory",
    help: "Comma-separated directories sessions may be opened in (required for HTTP beyond " +
      "loopback)",
    type: STRING_LIST,
  },
  http: {
    flag: "--http",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_HTTP",
    fileKey: "http",
    default: false,
    help: "Serve ACP over HTTP and WebSocket instead of stdio (experimental)",
    type: BOOLEAN,
  },
  host: {
    flag: "--host",
    placeholder: "<addr>",
    env: "ACP_HARNESS_HOST",
    fileKey: "host",
    default: "127.0.0.1",
    help: "HTTP: address to bind (beyond loopback it needs a token and --allowed-roots)",
    type: NON_EMPTY_STRING,
  },
  port: {
    flag: "--port",
    placeholder: "<n>",
    env: "ACP_HARNESS_PORT",
    fileKey: "port",
    default: 7337,
    help: "HTTP: port to bind; 0 picks a free one",
    type: PORT,
  },
  token: {
    flag: "--token",
    placeholder: "<token>",
    env: "ACP_HARNESS_TOKEN",
    fileKey: "token",
    default: undefined,
    help: "HTTP: bearer token clients must send",
    type: NON_EMPTY_STRING,
  },
  tokenFile: {
    flag: "--token-file",
    placeholder: "<file>",
    env: "ACP_HARNESS_TOKEN_FILE",
    fileKey: "tokenFile",
    default: undefined,
    help: "HTTP: file whose first line is the bearer token",
    type: NON_EMPTY_STRING,
  },
  tenants: {
    flag: "--tenants",
    placeholder: "<file>",
    env: "ACP_HARNESS_TENANTS",
    fileKey: "tenants",
    default: undefined,
    help: "HTTP: tenants file (JSON: names, token hashes, roots, limits; reloaded on SIGHUP)",
    type: NON_EMPTY_STRING,
  },
  allowedOrigins: {
    flag: "--allowed-origins",
    placeholder: "<list>",
    env: "ACP_HARNESS_ALLOWED_ORIGINS",
    fileKey: "allowedOrigins",
    default: [],
    shownDefault: "none",
    help: "HTTP: comma-separated browser origins allowed to call (* for any)",
    type: STRING_LIST,
  },
  maxConnections: {
    flag: "--max-connections",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_CONNECTIONS",
    fileKey: "maxConnections",
    default: 1000,
    help: "HTTP: most connections open at once",
    type: POSITIVE_INTEGER,
  },
  maxConnectionsPerAddress: {
    flag: "--max-connections-per-address",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_CONNECTIONS_PER_ADDRESS",
    fileKey: "maxConnectionsPerAddress",
    default: 100,
    help: "HTTP: most connections open at once from one peer address",
    type: POSITIVE_INTEGER,
  },
  maxSessionsPerConnection: {
    flag: "--max-sessions-per-connection",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_SESSIONS_PER_CONNECTION",
    fileKey: "maxSessionsPerConnection",
    default: 256,
    help: "HTTP: most sessions one connection may have open",
    type: POSITIVE_INTEGER,
  },
  maxBufferedBytes: {
    flag: "--max-buffered-bytes",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_BUFFERED_BYTES",
    fileKey: "maxBufferedBytes",
    default: 16 * 1024 * 1024,
    shownDefault: "16 MiB",
    help: "HTTP: output a connection holds for a client that is not reading",
    type: POSITIVE_INTEGER,
  },
  stallTimeout: {
    flag: "--stall-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_STALL_TIMEOUT",
    fileKey: "stallTimeout",
    default: 60,
    help: "HTTP: seconds a full output buffer waits for its reader before the connection closes",
    type: POSITIVE_INTEGER,
  },
  idleTimeout: {
    flag: "--idle-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_IDLE_TIMEOUT",
    fileKey: "idleTimeout",
    default: 600,
    help: "HTTP: seconds a connection may stay silent with nothing running before it closes",
    type: POSITIVE_INTEGER,
  },
  bodyTimeout: {
    flag: "--body-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_BODY_TIMEOUT",
    fileKey: "bodyTimeout",
    default: 60,
    help: "HTTP: seconds a request body may take to arrive in full (then 408)",
    type: POSITIVE_INTEGER,
  },
  headerTimeout: {
    flag: "--header-timeout",
    placeholder: "<s>",
    env: "ACP_HARNESS_HEADER_TIMEOUT",
    fileKey: "headerTimeout",
    default: 10,
    help: "HTTP: seconds a new socket has to send complete request headers before it closes",
    type: POSITIVE_INTEGER,
  },
  maxSockets: {
    flag: "--max-sockets",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_SOCKETS",
    fileKey: "maxSockets",
    default: 4096,
    help: "HTTP: most sockets open at once, never more than the open-files limit allows",
    type: POSITIVE_INTEGER,
  },
  maxSocketsPerAddress: {
    flag: "--max-sockets-per-address",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_SOCKETS_PER_ADDRESS",
    fileKey: "maxSocketsPerAddress",
    default: 256,
    help: "HTTP: most sockets of one peer address still sending their request headers",
    type: POSITIVE_INTEGER,
  },
  sessionListPageSize: {
    fileKey: "sessionListPageSize",
    default: 100,
    help: "Sessions per session/list page",
    type: POSITIVE_INTEGER,
  },
  providers: {
    fileKey: "providers",
    default: {},
    help: "Providers by id (they override built-in ones of the same id)",
    type: PROVIDERS_SECTION,
  },
  models: {
    fileKey: "models",
    default: {},
    help: "Model facts by full model id",
    type: MODELS_SECTION,
  },
  agents: {
    fileKey: "agents",
    default: {},
    help: "ACP agents the delegate tool can start, by name",
    type: AGENTS_SECTION,
  },
  mcpServers: {
    fileKey: "mcpServers",
    default: [],
    help: "MCP servers started for every session, as session/new's mcpServers",
    type: JSON_ARRAY,
  },
  maxDelegationDepth: {
    flag: "--max-delegation-depth",
    placeholder: "<n>",
    env: "ACP_HARNESS_MAX_DELEGATION_DEPTH",
    fileKey: "maxDelegationDepth",
    default: 1,
    help: "Levels of delegation to other ACP agents below the top-level server",
    type: NON_NEGATIVE_INTEGER,
  },
  allow: ruleSetting(
    "allow",
    "Let tool calls matching the rule run, before the mode asks or refuses",
  ),
  deny: ruleSetting("deny", "Refuse tool calls matching the rule (beats ask and allow rules)"),
  ask: ruleSetting("ask", "Ask before tool calls matching the rule run, even in auto mode"),
  sandbox: {
    flag: "--sandbox",
    placeholder: "<level>",
    env: "ACP_HARNESS_SANDBOX",
    fileKey: "sandbox",
    default: undefined,
    shownDefault: "detected",
    help: "Sandbox of commands: off, read-only or workspace-write",
    // "detected": workspace-write where bubblewrap works, else off with one warning line.
    note: "asked for explicitly and bubblewrap does not work: exit 2 (ACP_HARNESS_BWRAP names it)",
    type: oneOf(SANDBOX_LEVELS),
  },
  sandboxNetwork: {
    flag: "--sandbox-network",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_SANDBOX_NETWORK",
    fileKey: "sandboxNetwork",
    default: false,
    help: "Let sandboxed commands reach the network",
    type: BOOLEAN,
  },
  sandboxChildren: {
    flag: "--sandbox-children",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_SANDBOX_CHILDREN",
    fileKey: "sandboxChildren",
    default: false,
    help: "Run MCP stdio servers and delegated agents in the sandbox too",
    type: BOOLEAN,
  },
  record: {
    flag: "--record",
    placeholder: "<dir>",
    env: "ACP_HARNESS_RECORD",
    fileKey: "record",
    default: undefined,
    help: "Record every provider exchange to a cassette directory (credentials never stored)",
    type: NON_EMPTY_STRING,
  },
  replay: {
    flag: "--replay",
    placeholder: "<dir>",
    env: "ACP_HARNESS_REPLAY",
    fileKey: "replay",
    default: undefined,
    help: "Answer providers from a recorded cassette, never the network; a miss fails the turn",
    type: NON_EMPTY_STRING,
  },
  replaySpeed: {
    flag: "--replay-speed",
    placeholder: "<speed>",
    env: "ACP_HARNESS_REPLAY_SPEED",
    fileKey: "replaySpeed",
    default: "instant",
    help: "Replayed answers at once (instant) or at their recorded timing (recorded)",
    type: oneOf(["instant", "recorded"] as const),
  },
  recordMissing: {
    flag: "--record-missing",
    placeholder: "<bool>",
    bare: true,
    env: "ACP_HARNESS_RECORD_MISSING",
    fileKey: "recordMissing",
    default: false,
    help: "With --replay: send what the cassette misses and record it there",
    type: BOOLEAN,
  },
  sandboxPids: {
    flag: "--sandbox-pids",
    placeholder: "<n>",
    env: "ACP_HARNESS_SANDBOX_PIDS",
    fileKey: "sandboxPids",
    default: 1024,
    help: "Most processes one sandboxed command may have (a pids cgroup, where one is writable)",
    type: POSITIVE_INTEGER,
  },
};

/** The setting of the permission rules of one kind (see docs/permission.md). */
function ruleSetting(
  kind: "allow" | "deny" | "ask",
  help: string,
): Setting<readonly PermissionRule[]> {
  return {
    flag: `--${kind}`,
    placeholder: "<rule>",
    env: `ACP_HARNESS_${kind.toUpperCase()}`,
    fileKey: `permissions.${kind}`,
    default: [],
    shownDefault: "none",
    help: `${help}; repeatable`,
    ...(kind === "allow"
      ? {
        note: "a rule is TOOL or TOOL(SPECIFIER): write_file, mcp__github__*, " +
          "run_command(npm test *), write_file(src/**), delegate(reviewer); the variables are " +
          "comma-separated; flags, variables and file add up (docs/permission.md)",
      }
      : {}),
    type: ruleList(kind),
    merge: addRules,
  };
}

/** A config being filled in: every field optional and writable. */
export type ConfigDraft = { -readonly [K in keyof Config]?: Config[K] };

function isSettingKey(key: string): key is keyof Config {
  return Object.hasOwn(SETTINGS, key);
}

/** The keys of {@link SETTINGS}, in its order (that of the usage text). */
export const SETTING_KEYS: readonly (keyof Config)[] = Object.keys(SETTINGS).filter(isSettingKey);

/**
 * The settings by one of their names: the flag, the environment variable or the file key.
 *
 * @param name Picks the name of a setting (`undefined` for one without)
 * @returns The key of each setting by that name
 */
export function settingKeysBy(
  name: (setting: SettingsTable[keyof Config]) => string | undefined,
): Map<string, keyof Config> {
  const keys = new Map<string, keyof Config>();
  for (const key of SETTING_KEYS) {
    const found = name(SETTINGS[key]);
    if (found !== undefined) keys.set(found, key);
  }
  return keys;
}

const BY_ENV = settingKeysBy((setting) => setting.env);
const BY_FILE_KEY = settingKeysBy((setting) => setting.fileKey);

function putDefault<K extends keyof Config>(config: ConfigDraft, key: K): void {
  config[key] = SETTINGS[key].default;
}

function isComplete(config: ConfigDraft): config is Config {
  return SETTING_KEYS.every((key) => Object.hasOwn(config, key));
}

function defaultConfig(): Config {
  const config: ConfigDraft = {};
  for (const key of SETTING_KEYS) putDefault(config, key);
  if (!isComplete(config)) throw new TypeError("Cannot build the default config: a key is missing");
  return config;
}

/** Default settings. */
export const DEFAULT_CONFIG: Config = defaultConfig();

// ---------------------------------------------------------------------------------------------
// Reading the sources.

/**
 * Sets `key` from a text, or to the flag's bare value when `text` is `undefined`.
 *
 * @param into The config being filled in
 * @param key The setting
 * @param text Its text, from a flag or a variable
 * @param name The flag or variable, for messages
 * @throws {ConfigError} For a missing or bad value, or a setting only the config file sets
 */
export function setFromText<K extends keyof Config>(
  into: ConfigDraft,
  key: K,
  text: string | undefined,
  name: string,
): void {
  const setting = SETTINGS[key];
  const fromText = setting.type.fromText;
  if (text === undefined && setting.bare !== undefined) into[key] = setting.bare;
  else if (text === undefined) throw new ConfigError(`Option "${name}" needs a value`);
  else if (fromText) into[key] = fromText(text, name);
  else throw new ConfigError(`Cannot read "${name}": "${key}" is read from the config file only`);
}

function setFromJson<K extends keyof Config>(
  into: ConfigDraft,
  key: K,
  json: unknown,
  name: string,
): void {
  into[key] = SETTINGS[key].type.fromJson(json, name);
}

/** Runs `read`, putting `prefix` before the message of a ConfigError it throws. */
function withPrefix(prefix: string, read: () => void): void {
  try {
    read();
  } catch (error) {
    if (error instanceof ConfigError) throw new ConfigError(`${prefix}${error.message}`);
    throw error;
  }
}

/**
 * Reads the settings that environment variables give.
 *
 * @param env Looks up one variable
 * @returns The settings found
 * @throws {ConfigError} Naming the variable with a bad value
 */
export function configFromEnv(env: (name: string) => string | undefined): Partial<Config> {
  const settings: ConfigDraft = {};
  for (const [name, key] of BY_ENV) {
    const value = env(name);
    if (value === undefined || value === "") continue;
    withPrefix(`${name}: `, () => setFromText(settings, key, value, name));
  }
  return settings;
}

/**
 * Reads the settings a JSON config file gives.
 *
 * @param json The parsed file
 * @param file The file's path, for messages
 * @returns The settings found
 * @throws {ConfigError} Naming the key with a bad value
 */
export function configFromFile(json: unknown, file: string): Partial<Config> {
  const prefix = `Cannot read config file "${file}": `;
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    throw new ConfigError(`${prefix}expected a JSON object`);
  }
  const settings: ConfigDraft = {};
  for (const [name, value] of sectionEntries(json as Record<string, unknown>, prefix)) {
    if (name === "$schema") continue;
    const key = BY_FILE_KEY.get(name);
    if (key === undefined) {
      const near = nearestWord(name, BY_FILE_KEY.keys());
      throw new ConfigError(
        `${prefix}unknown key "${name}"${near === undefined ? "" : ` (did you mean "${near}"?)`}`,
      );
    }
    withPrefix(prefix, () => setFromJson(settings, key, value, name));
  }
  return settings;
}

/** The sections whose keys are settings of their own (`permissions.allow`). */
const SECTIONS = new Set(
  [...BY_FILE_KEY.keys()].filter((key) => key.includes(".")).map((key) => key.split(".")[0]),
);

/** A file's entries, with each section's entries named `<section>.<key>`. */
function sectionEntries(json: Record<string, unknown>, prefix: string): Array<[string, unknown]> {
  const entries: Array<[string, unknown]> = [];
  for (const [name, value] of Object.entries(json)) {
    if (!SECTIONS.has(name)) {
      entries.push([name, value]);
      continue;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      throw new ConfigError(`${prefix}"${name}" must be an object`);
    }
    for (const [key, inner] of Object.entries(value)) entries.push([`${name}.${key}`, inner]);
  }
  return entries;
}

function copySetting<K extends keyof Config>(
  into: ConfigDraft,
  from: Partial<Config>,
  key: K,
): void {
  const value = from[key];
  if (value === undefined) return;
  const merge = SETTINGS[key].merge;
  const before = into[key];
  into[key] = merge && before !== undefined ? merge(before, value) : value;
}

/**
 * Merges settings; later sources win.
 *
 * @param sources Settings from lowest to highest precedence
 * @returns The complete config
 */
export function mergeConfig(...sources: ReadonlyArray<Partial<Config>>): Config {
  // A setting with `merge` (the permission rules) adds each source to the ones below.
  const merged: Config = { ...DEFAULT_CONFIG };
  const draft: ConfigDraft = merged; // the same object, writable while the sources are copied in
  for (const source of sources) {
    for (const key of SETTING_KEYS) copySetting(draft, source, key);
  }
  return merged;
}
