/**
 * The CLI's `Config` (seconds, flags, a file's keys) mapped once to what the parts it composes
 * take (ms, each part its own settings): every seconds → ms conversion of the CLI is here.
 *
 * @module
 */
import { type Config, ConfigError } from "../config/config.ts";
import { type McpServerSpec, parseMcpServers } from "../mcp/mcp_declarations.ts";
import { McpDeclarationError } from "../mcp/mcp_errors.ts";
import { MCP_CAPABILITIES } from "../protocol/agent_capabilities.ts";
import type { ServerSettings } from "../server/server_settings.ts";
import type { HttpLimits } from "../transport/http/http_transport.ts";
import type { ListenOptions } from "../transport/http/http_handler.ts";

/** What the CLI hands each part it composes, from one {@link Config}. */
export interface CliSettings {
  /** The agent server's settings. */
  readonly server: ServerSettings;
  /** The session store's timings (`openSessionStore`, `copy-sessions`). */
  readonly store: {
    /** How long a PostgreSQL session lease lives without a heartbeat, in ms. */
    readonly leaseTtlMs: number;
    /** How long a write waits for the store to confirm it, in ms. */
    readonly commitTimeoutMs: number;
  };
  /** The HTTP transport's limits (`--http`). */
  readonly httpLimits: HttpLimits;
  /** How the HTTP listener binds (`--http`). */
  readonly httpListen: ListenOptions;
}

const MS_PER_S = 1000;

/**
 * The settings of every part the CLI composes, from its merged config.
 *
 * @example Seconds become ms
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_CONFIG } from "../config/config.ts";
 * import { settingsOf } from "./cli_settings.ts";
 * const settings = settingsOf({ ...DEFAULT_CONFIG, permissionTimeout: 5 });
 * assert.equal(settings.server.permissionTimeoutMs, 5000);
 * ```
 *
 * @param config The merged config
 * @returns The settings of the server, the store and the HTTP transport
 * @throws {ConfigError} When an entry of `mcpServers` is invalid (naming it and its field)
 */
export function settingsOf(config: Config): CliSettings {
  return {
    server: {
      model: config.model,
      mode: config.mode,
      stream: config.stream,
      maxSteps: config.maxSteps,
      promptQueue: config.promptQueue,
      worktrees: config.worktrees,
      worktreeFrom: config.worktreeFrom,
      checkpoints: config.checkpoints,
      checkpointMaxFileSize: config.checkpointMaxFileSize,
      ...budgetSettings(config),
      compactThreshold: config.compactThreshold,
      storeCommitTimeoutMs: config.storeCommitTimeout * MS_PER_S,
      mcpStartTimeoutMs: config.mcpStartTimeout * MS_PER_S,
      mcpCallTimeoutMs: config.mcpCallTimeout * MS_PER_S,
      mcpStrict: config.mcpStrict,
      ...operatorMcpServers(config.mcpServers),
      sessionListPageSize: config.sessionListPageSize,
      permissionTimeoutMs: config.permissionTimeout * MS_PER_S,
      maxRequestsInFlight: config.maxRequestsInFlight,
      permissionRules: { allow: config.allow, deny: config.deny, ask: config.ask },
    },
    store: {
      leaseTtlMs: config.leaseTtl * MS_PER_S,
      commitTimeoutMs: config.storeCommitTimeout * MS_PER_S,
    },
    httpLimits: {
      maxBodyBytes: config.maxMessageBytes,
      maxConnections: config.maxConnections,
      maxConnectionsPerAddress: config.maxConnectionsPerAddress,
      maxSessionsPerConnection: config.maxSessionsPerConnection,
      maxBufferedBytes: config.maxBufferedBytes,
      stallTimeoutMs: config.stallTimeout * MS_PER_S,
      idleTimeoutMs: config.idleTimeout * MS_PER_S,
      bodyTimeoutMs: config.bodyTimeout * MS_PER_S,
    },
    httpListen: {
      hostname: config.host,
      port: config.port,
      maxMessageBytes: config.maxMessageBytes,
      headerTimeoutMs: config.headerTimeout * MS_PER_S,
      maxSockets: config.maxSockets,
      maxSocketsPerAddress: config.maxSocketsPerAddress,
    },
  };
}

/**
 * The config file's `mcpServers`, checked as `session/new` checks a client's (the same
 * validator): none gives no field.
 *
 * @throws {ConfigError} `Invalid "mcpServers" in the config file: mcpServers[1].command: …`
 */
function operatorMcpServers(
  declared: readonly unknown[],
): { mcpServers?: readonly McpServerSpec[] } {
  if (declared.length === 0) return {};
  try {
    return { mcpServers: parseMcpServers(declared, MCP_CAPABILITIES) };
  } catch (error) {
    if (error instanceof McpDeclarationError) {
      throw new ConfigError(`Invalid "mcpServers" in the config file: ${error.message}`);
    }
    throw error;
  }
}

/** The budget settings of a config: 0 is no limit (left out), seconds become ms. */
function budgetSettings(config: Config): Partial<ServerSettings> {
  const limits: Record<string, number> = {};
  const set = (key: string, value: number, scale = 1): void => {
    if (value > 0) limits[key] = value * scale;
  };
  set("maxToolCalls", config.maxToolCalls);
  set("turnTimeoutMs", config.turnTimeout, MS_PER_S);
  set("maxSessionTokens", config.maxSessionTokens);
  set("maxSessionCostUsd", config.maxSessionCost);
  return limits;
}
