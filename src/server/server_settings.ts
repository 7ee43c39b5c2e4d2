/**
 * The settings of an agent server: what its connections, handlers, sessions and turns read,
 * owned by the core (not the CLI's `Config`, whose flags, port and token are the CLI's own).
 *
 * @module
 */
import type { ProtocolSettings } from "../protocol/connection_context.ts";
import { NO_RULES } from "../permission/rules.ts";
import { DEFAULT_MAX_REQUESTS_IN_FLIGHT } from "../protocol/request_bound.ts";
import type { SessionSettings } from "../session/session_services.ts";

export type { ProtocolSettings, SessionSettings };
export type { TurnSettings } from "../agent/run_turn.ts";

/**
 * The settings of an agent server, times in ms. Each layer declares the fields it reads, with
 * their defaults: the turn loop's `maxSteps` and `stream` (`TurnSettings`), the sessions'
 * `model`, `mode`, `compactThreshold`, `storeCommitTimeoutMs`, `mcpStartTimeoutMs`,
 * `mcpCallTimeoutMs` and `mcpStrict` (`SessionSettings`), the handlers' `sessionListPageSize`
 * (`ProtocolSettings`), and the connection's own below. {@link DEFAULT_SERVER_SETTINGS} holds
 * every default.
 */
export interface ServerSettings extends SessionSettings, ProtocolSettings {
  /** Most model requests in one turn (the turn loop's, read by the handlers as a budget too). */
  readonly maxSteps: number;
  /**
   * How long a permission request waits for the client's answer before refusing, in ms.
   * @default {300_000}
   */
  readonly permissionTimeoutMs: number;
  /**
   * Most requests of one connection being handled at once: past it the connection stops reading
   * its input until one is answered (a running prompt counts until its turn starts). A
   * connection's own `maxRequestsInFlight` option overrides it. @default {64}
   */
  readonly maxRequestsInFlight: number;
}

/**
 * The default of every {@link ServerSettings} field (the CLI's defaults are the same).
 *
 * @example Changing one setting
 * ```ts
 * import assert from "node:assert/strict";
 * import { DEFAULT_SERVER_SETTINGS, type ServerSettings } from "./server_settings.ts";
 * const settings: ServerSettings = { ...DEFAULT_SERVER_SETTINGS, maxSteps: 10 };
 * assert.equal(settings.model, "echo");
 * ```
 */
export const DEFAULT_SERVER_SETTINGS: ServerSettings = Object.freeze({
  model: "echo",
  mode: "ask",
  stream: false,
  maxSteps: 50,
  compactThreshold: 0.8,
  storeCommitTimeoutMs: 30_000,
  mcpStartTimeoutMs: 30_000,
  mcpCallTimeoutMs: 300_000,
  mcpStrict: false,
  sessionListPageSize: 100,
  permissionTimeoutMs: 300_000,
  maxRequestsInFlight: DEFAULT_MAX_REQUESTS_IN_FLIGHT,
  permissionRules: NO_RULES,
  promptQueue: 8,
  worktrees: false,
  worktreeFrom: "head",
  checkpoints: true,
  checkpointMaxFileSize: 1_048_576,
});
