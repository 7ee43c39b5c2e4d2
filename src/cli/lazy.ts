/**
 * The modules the command line loads on first use: the JSON reader of config and script files,
 * the commands other than serving, the tools of a delegating server, and the HTTP transport.
 * Serving stdio loads none of them at start-up; how they stay out of the start-up graph is
 * explained once, in `src/util/lazy_import.ts`.
 *
 * @module
 */
import type * as JsonText from "../config/json_text.ts";
import type * as DelegateTool from "../delegation/delegate_tool.ts";
import type * as BuiltinTools from "../tools/builtin_tools.ts";
import type * as HttpSecurity from "../transport/http/http_security.ts";
import type * as HttpTransport from "../transport/http/http_transport.ts";
import { lazyImport } from "../util/lazy_import.ts";
import type * as Cassettes from "./cassettes.ts";
import type * as CopySessionsCommand from "./copy_sessions_command.ts";
import type * as ExportScriptCommand from "./export_script_command.ts";
import type * as ModelsCommand from "./models_command.ts";
import type * as RunCommand from "./run_command.ts";
import type * as MetricsEndpoint from "./metrics_endpoint.ts";
import type * as OtelTracing from "../telemetry/otel_tracing.ts";
import type * as CommandSandbox from "../sandbox/command_sandbox.ts";
import type * as HashTokenCommand from "./hash_token_command.ts";
import type * as TenantsFile from "./tenants_file.ts";

/**
 * The JSON reader with line and column in its errors (config and script files).
 *
 * @returns The module `src/config/json_text.ts`
 */
export function loadJsonText(): Promise<typeof JsonText> {
  return lazyImport<typeof JsonText>(import("../config/json_text" + ".ts"));
}

/**
 * `acp-harness copy-sessions`.
 *
 * @returns The module `src/cli/copy_sessions_command.ts`
 */
export function loadCopySessionsCommand(): Promise<typeof CopySessionsCommand> {
  return lazyImport<typeof CopySessionsCommand>(import("./copy_sessions_command" + ".ts"));
}

/**
 * `acp-harness export-script`.
 *
 * @returns The module `src/cli/export_script_command.ts`
 */
export function loadExportScriptCommand(): Promise<typeof ExportScriptCommand> {
  return lazyImport<typeof ExportScriptCommand>(import("./export_script_command" + ".ts"));
}

/**
 * The table and JSON of `acp-harness models`.
 *
 * @returns The module `src/cli/models_command.ts`
 */
export function loadModelsCommand(): Promise<typeof ModelsCommand> {
  return lazyImport<typeof ModelsCommand>(import("./models_command" + ".ts"));
}

/**
 * `acp-harness run`.
 *
 * @returns The module `src/cli/run_command.ts`
 */
export function loadRunCommand(): Promise<typeof RunCommand> {
  return lazyImport<typeof RunCommand>(import("./run_command" + ".ts"));
}

/**
 * The built-in tools, for a server that also delegates (the default tool set loads them itself).
 *
 * @returns The module `src/tools/builtin_tools.ts`
 */
export function loadBuiltinTools(): Promise<typeof BuiltinTools> {
  return lazyImport<typeof BuiltinTools>(import("../tools/builtin_tools" + ".ts"));
}

/**
 * The `delegate` tool.
 *
 * @returns The module `src/delegation/delegate_tool.ts`
 */
export function loadDelegateTool(): Promise<typeof DelegateTool> {
  return lazyImport<typeof DelegateTool>(import("../delegation/delegate_tool" + ".ts"));
}

/**
 * The bind-address checks of `serve --http`.
 *
 * @returns The module `src/transport/http/http_security.ts`
 */
export function loadHttpSecurity(): Promise<typeof HttpSecurity> {
  return lazyImport<typeof HttpSecurity>(import("../transport/http/http_security" + ".ts"));
}

/**
 * The HTTP and WebSocket transport of `serve --http` (Hono).
 *
 * @returns The module `src/transport/http/http_transport.ts`
 */
export function loadHttpTransport(): Promise<typeof HttpTransport> {
  return lazyImport<typeof HttpTransport>(import("../transport/http/http_transport" + ".ts"));
}

/**
 * `src/sandbox/command_sandbox.ts`, for setting up the command sandbox at start-up.
 *
 * @returns The module
 */
export function loadSandbox(): Promise<typeof CommandSandbox> {
  return lazyImport<typeof CommandSandbox>(import("../sandbox/command_sandbox" + ".ts"));
}

/**
 * The cassettes of `--record` and `--replay` (`cassettes.ts`), loaded only by a run that uses them.
 *
 * @returns The module
 */
export function loadCassettes(): Promise<typeof Cassettes> {
  return lazyImport<typeof Cassettes>(import("./cassettes" + ".ts"));
}

/**
 * The Prometheus metrics and their listener (`metrics_endpoint.ts`, with `prom-client`), loaded
 * only when `--metrics-port` is given.
 *
 * @returns The module
 */
export function loadMetricsEndpoint(): Promise<typeof MetricsEndpoint> {
  return lazyImport<typeof MetricsEndpoint>(import("./metrics_endpoint" + ".ts"));
}

/**
 * The OpenTelemetry trace pipeline (`--otel`, `OTEL_EXPORTER_OTLP_*ENDPOINT`).
 *
 * @returns The module `src/telemetry/otel_tracing.ts`
 */
export function loadTracing(): Promise<typeof OtelTracing> {
  return lazyImport<typeof OtelTracing>(import("../telemetry/otel_tracing" + ".ts"));
}

/**
 * `acp-harness hash-token` (`hash_token_command.ts`).
 *
 * @returns The module
 */
export function loadHashTokenCommand(): Promise<typeof HashTokenCommand> {
  return lazyImport<typeof HashTokenCommand>(import("./hash_token_command" + ".ts"));
}

/**
 * The tenants file of `serve --http --tenants` (`tenants_file.ts`).
 *
 * @returns The module
 */
export function loadTenantsFile(): Promise<typeof TenantsFile> {
  return lazyImport<typeof TenantsFile>(import("./tenants_file" + ".ts"));
}
