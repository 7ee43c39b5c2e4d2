import {
  type Config,
  ConfigError,
  configFromEnv,
  configFromFile,
  mergeConfig,
} from "../config/config.ts";
import { parseArgs } from "../config/args.ts";
import { USAGE } from "../config/usage.ts";
import type { ToolSetFactory } from "../session/tool_set_factory.ts";
import {
  DELEGATION_DEPTH_ENV,
  mayDelegate,
  readDelegationDepth,
} from "../delegation/delegation_depth.ts";
import type { Host } from "../host/host.ts";
import type { SessionStore } from "../store/session_store.ts";
import { ModelCatalog } from "../llm/catalog.ts";
import { builtinProviders, type ProviderSpec } from "../llm/presets.ts";
import { parseScript, type Script } from "../llm/scripted.ts";
import { createLogger, type Logger } from "../log/logger.ts";
import { isPostgresUrl, MEMORY_STORE, openSessionStore } from "../store/open_session_store.ts";
import { normalizePath } from "../tools/posix_path.ts";
import { isAbsolutePath } from "../util/path.ts";
import {
  type AgentServer,
  type AgentServerConnection,
  createAgentServer,
} from "../server/agent_server.ts";
import type { HttpListener, ListenOptions, ServeHttp } from "../transport/http/http_handler.ts";
import type { HttpTransport } from "../transport/http/http_transport.ts";
import { type NdJsonStream, ndJsonStream } from "../transport/nd_json_stream.ts";
import { abortableDelay } from "../util/abortable_delay.ts";
import { VERSION } from "../util/version.ts";
import { secretValues, serverSecretEnv } from "../server/server_secrets.ts";
import { settingsOf } from "./cli_settings.ts";
import {
  loadBuiltinTools,
  loadCassettes,
  loadCopySessionsCommand,
  loadDelegateTool,
  loadExportScriptCommand,
  loadHashTokenCommand,
  loadHttpSecurity,
  loadHttpTransport,
  loadJsonText,
  loadMetricsEndpoint,
  loadModelsCommand,
  loadRunCommand,
  loadSandbox,
  loadTenantsFile,
  loadTracing,
} from "./lazy.ts";
import type { RunOptions } from "../config/run_args.ts";
import type { Cassettes } from "./cassettes.ts";
import type { McpServer } from "../transport/acp_client.ts";
import type { CommandSandbox } from "../sandbox/command_sandbox.ts";
import { sandboxedProcesses } from "../sandbox/sandboxed_processes.ts";
import {
  combineTelemetry,
  NOOP_TELEMETRY,
  type Telemetry,
  tracesWanted,
} from "../telemetry/telemetry.ts";
import type { Tracing } from "../telemetry/otel_tracing.ts";
import type { MetricsEndpoint } from "./metrics_endpoint.ts";
import type { TenantDirectory } from "../server/tenants.ts";

/** What a runtime entry point hands the CLI. */
export interface CliPlatform {
  /** Arguments after the program name. */
  readonly args: readonly string[];
  /** The operating system. */
  readonly host: Host;
  /** Standard input: ACP messages from the client. */
  readonly stdin: ReadableStream<Uint8Array>;
  /** Standard output: ACP messages to the client (or the `--help`/`--version` text). */
  readonly stdout: WritableStream<Uint8Array>;
  /** Writes diagnostics (stderr). */
  writeStderr(text: string): void;
  /** Whether stderr is a terminal (log lines then go without their time). @default {false} */
  readonly stderrIsTerminal?: boolean;
  /** Whether stdin is a terminal (`run` then reads no prompt from it). @default {false} */
  readonly stdinIsTerminal?: boolean;
  /** Calls `handler` on SIGINT or SIGTERM; returns a function that stops listening. */
  onShutdownSignal(handler: () => void): () => void;
  /**
   * Calls `handler` on SIGHUP (the tenants file is read again); returns a function that stops
   * listening. Absent on a platform without the signal.
   */
  onReloadSignal?(handler: () => void): () => void;
  /** Runs `task` soon after pending I/O (`setImmediate`), to coalesce bursts of output. */
  readonly defer?: (task: () => void) => void;
  /**
   * Binds an HTTP listener for the HTTP transport, with the runtime's own server. The runtime
   * loads it on first use, so serving stdio never does.
   */
  readonly serveHttp?: ServeHttp;
}

/** The line after a command-line error. */
const USAGE_HINT = 'run "acp-harness --help" for usage\n';

/** How long shutdown waits for turns to settle before giving up on them. */
export const SHUTDOWN_GRACE_MS = 1500;
/**
 * How long the commands still running at shutdown get between SIGTERM and SIGKILL (shorter than
 * {@link SHUTDOWN_GRACE_MS}, so that a turn waiting for a command still settles).
 */
export const SHUTDOWN_KILL_GRACE_MS = 1000;

/** How long `acp-harness models` and the start-up query wait for a provider's model list. */
const DISCOVERY_TIMEOUT_MS = 3000;

/**
 * Runs the acp-harness command line: `--help`, `--version`, `models`, or serve ACP on stdio until
 * stdin closes or a shutdown signal arrives.
 *
 * @param platform The runtime's streams, host and signals
 * @returns The process exit code: 0 after a clean shutdown, 2 for a usage or config error
 */
export async function runCli(platform: CliPlatform): Promise<number> {
  const out = platform.stdout.getWriter();
  let config: Config;
  let catalog: ModelCatalog;
  let logger: Logger;
  let usageError = true;
  let run: RunOptions | undefined;
  let cassettes: Cassettes | undefined;
  try {
    const command = parseArgs(platform.args);
    usageError = false;
    if (command.kind === "help" || command.kind === "version") {
      await out.write(new TextEncoder().encode(command.kind === "help" ? USAGE : `${VERSION}\n`));
      await out.close();
      return 0;
    }
    if (command.kind === "hash-token") {
      out.releaseLock();
      const { hashTokenCommand } = await loadHashTokenCommand();
      return await hashTokenCommand(platform, command.help);
    }
    const env = configFromEnv((name) => platform.host.env(name));
    const given = command.overrides.configFile ?? env.configFile;
    const file = given === undefined ? undefined : absolutePath(given, platform.host);
    const fromFile = file
      ? resolveFilePaths(configFromFile(await readJson(platform.host, file), file), file)
      : {};
    config = mergeConfig(fromFile, env, command.overrides);
    if (command.kind === "run") {
      run = command.run;
      // --ephemeral: the session lives in memory and is gone when the run ends.
      if (run.ephemeral) config = { ...config, store: MEMORY_STORE };
    }
    logger = createLogger(config.logLevel, (line) => platform.writeStderr(line), {
      format: config.logFormat,
      timestamps: platform.stderrIsTerminal !== true,
    });
    let script: Script | undefined;
    if (config.script) {
      const origin = config.script === fromFile.script ? ` ("script" in "${file}")` : "";
      script = parseScript(await readJson(platform.host, config.script, origin), config.script);
    }
    if (config.record !== undefined || config.replay !== undefined || config.recordMissing) {
      const { openCassettes } = await loadCassettes();
      cassettes = await openCassettes(
        config,
        platform.host,
        dataDirectory(config, platform.host),
        // The providers' keys, never stored in a cassette.
        secretValues(providerKeyNames(config), (name) => platform.host.env(name)),
      );
    }
    if (command.kind === "copy-sessions") {
      out.releaseLock();
      return await copySessionsCommand(platform, config, logger, command);
    }
    if (command.kind === "export-script") {
      out.releaseLock();
      const { exportScriptCommand } = await loadExportScriptCommand();
      const location = storeLocation(config, platform.host);
      const { sessionId } = command;
      return await exportScriptCommand({ platform, config, logger, location, sessionId });
    }
    if (command.kind === "models") {
      catalog = createCatalog(config, platform.host, { script, logger, cassettes });
      await printModels(platform, out, catalog, { model: config.model, json: command.json });
      await cassettes?.settled();
      return 0;
    }
    if (config.model === "scripted" && !script) {
      throw new ConfigError(`Model "scripted" needs a script: pass --script <file>`);
    }
    catalog = createCatalog(config, platform.host, { script, logger, cassettes });
    if (!catalog.info(config.model)) {
      try {
        catalog.resolve(config.model);
      } catch (error) {
        throw new ConfigError((error as Error).message);
      }
    }
  } catch (error) {
    if (error instanceof ConfigError || error instanceof TypeError) {
      // One line says what is wrong; the usage is for --help. A mistyped command line also gets
      // the pointer to it.
      platform.writeStderr(`acp-harness: ${error.message}\n${usageError ? USAGE_HINT : ""}`);
      out.releaseLock();
      return 2;
    }
    throw error;
  }
  out.releaseLock();
  try {
    if (config.tenants !== undefined && (run || !config.http)) {
      throw new ConfigError(
        `Option "--tenants" applies only to "acp-harness serve --http" (tenants are told apart ` +
          "by their bearer tokens, which only HTTP carries)",
      );
    }
    if (run) return await runCommand(platform, config, catalog, logger, run);
    return config.http
      ? await runHttpServer(platform, config, catalog, logger)
      : await runStdioServer(platform, config, catalog, logger);
  } catch (error) {
    if (error instanceof ConfigError) {
      platform.writeStderr(`acp-harness: ${error.message}\n`);
      return 2;
    }
    throw error;
  } finally {
    // Every recorded exchange is on disk before the process exits.
    await cassettes?.settled().catch((error: unknown) => {
      logger.error("the cassette was not written in full", { error: String(error) });
    });
  }
}

/** The API key variables of the built-in and the config file's providers. */
function providerKeyNames(config: Config): string[] {
  const specs = [
    ...Object.values(builtinProviders(() => undefined)),
    ...Object.values(config.providers),
  ];
  return [...new Set(specs.flatMap((spec) => spec.apiKeyEnv ? [spec.apiKeyEnv] : []))];
}

/**
 * `acp-harness run`: reads the prompt, the attached files and `--mcp-config`, composes the server
 * as `serve` does, runs the prompt through it in process, shuts down; the exit code tells how the
 * turn ended (see `src/cli/run_command.ts`).
 */
async function runCommand(
  platform: CliPlatform,
  config: Config,
  catalog: ModelCatalog,
  logger: Logger,
  run: RunOptions,
): Promise<number> {
  if (config.http) throw new ConfigError(`Option "--http" does not apply to "acp-harness run"`);
  const prompt = await runPromptText(platform, run);
  const files: string[] = [];
  for (const given of run.files) {
    const path = absolutePath(given, platform.host);
    const info = await platform.host.stat(path).catch(() => undefined);
    if (!info || info.isDirectory) throw new ConfigError(`--file "${given}": not a file`);
    files.push(path);
  }
  const mcpServers = run.mcpConfig === undefined ? [] : mcpServersOf(
    await readJson(platform.host, absolutePath(run.mcpConfig, platform.host), " (--mcp-config)"),
    run.mcpConfig,
  );
  const observed = await startTelemetry(platform, config, logger);
  try {
    return await runComposed(platform, config, catalog, logger, {
      run,
      prompt,
      files,
      mcpServers,
      telemetry: observed.telemetry,
    });
  } finally {
    await observed.close();
  }
}

/** `run`'s prompt, once read, with what it runs with. */
interface RunInput {
  readonly run: RunOptions;
  readonly prompt: string;
  readonly files: readonly string[];
  readonly mcpServers: readonly McpServer[];
  readonly telemetry: Telemetry | undefined;
}

/** Composes the server of `run` and runs its prompt through it (see {@link runCommand}). */
async function runComposed(
  platform: CliPlatform,
  config: Config,
  catalog: ModelCatalog,
  logger: Logger,
  input: RunInput,
): Promise<number> {
  const { run, prompt, files, mcpServers } = input;
  const [{ runPrompt }, { server, closeStore }] = await Promise.all([
    loadRunCommand(),
    composeServer(platform, config, catalog, logger, "stdio", input.telemetry),
  ]);
  const out = platform.stdout.getWriter();
  let written: Promise<void> = Promise.resolve();
  try {
    return await runPrompt({
      server,
      options: run,
      prompt,
      cwd: platform.host.cwd(),
      files,
      mcpServers,
      writeStdout: (text) =>
        written = written.then(() => out.write(new TextEncoder().encode(text))),
      writeStderr: (text) => platform.writeStderr(text),
      stderrIsTerminal: platform.stderrIsTerminal === true,
      onShutdownSignal: (handler) => platform.onShutdownSignal(handler),
    });
  } finally {
    await written.catch(() => {});
    await out.close().catch(() => {});
    await server.close();
    await platform.host.stopProcesses({ graceMs: SHUTDOWN_KILL_GRACE_MS });
    await closeStore();
  }
}

/** The server's metrics and traces, as on (neither is loaded when off). */
interface Observability {
  /** What the server reports to; `undefined` when neither is on. */
  readonly telemetry: Telemetry | undefined;
  /** `--metrics-port`'s telemetry and listener. */
  readonly metrics: MetricsEndpoint | undefined;
  /** Flushes the traces (within the shutdown grace) and closes the metrics listener. */
  close(): Promise<void>;
}

/**
 * The metrics (`--metrics-port`) and the traces (`--otel`, `OTEL_EXPORTER_OTLP_*ENDPOINT`), both
 * started before the server is composed.
 */
async function startTelemetry(
  platform: CliPlatform,
  config: Config,
  logger: Logger,
): Promise<Observability> {
  const metrics = await startMetrics(platform, config, logger);
  const env = (name: string): string | undefined => platform.host.env(name);
  let tracing: Tracing | undefined;
  try {
    if (tracesWanted(config.otel, env)) {
      const { startTracing } = await loadTracing();
      tracing = startTracing({ env, version: VERSION, logger });
    }
  } catch (error) {
    await metrics?.close();
    throw error;
  }
  const combined = combineTelemetry([
    metrics?.telemetry ?? NOOP_TELEMETRY,
    tracing?.telemetry ?? NOOP_TELEMETRY,
  ]);
  return {
    telemetry: combined.enabled ? combined : undefined,
    metrics,
    close: async () => {
      try {
        await tracing?.close(SHUTDOWN_KILL_GRACE_MS);
      } finally {
        await metrics?.close();
      }
    },
  };
}

/**
 * `--metrics-port`: the Prometheus telemetry and its listener, bound before the server is
 * composed; `undefined` when metrics are off (nothing of them is loaded then).
 */
async function startMetrics(
  platform: CliPlatform,
  config: Config,
  logger: Logger,
): Promise<MetricsEndpoint | undefined> {
  if (config.metricsPort === undefined) return undefined;
  const { startMetricsEndpoint } = await loadMetricsEndpoint();
  const token = config.token ??
    (config.tokenFile ? await readToken(platform.host, config.tokenFile) : undefined);
  return await startMetricsEndpoint({
    serveHttp: platform.serveHttp,
    port: config.metricsPort,
    hostname: config.metricsHost,
    token,
    logger,
  });
}

/** The prompt of `run`: its words, or stdin for `-` or none (when stdin is not a terminal). */
async function runPromptText(platform: CliPlatform, run: RunOptions): Promise<string> {
  const fromStdin = run.words.length === 0 || (run.words.length === 1 && run.words[0] === "-");
  // Stdin is left alone unless the prompt is read from it (see `stdin` in src/runtime/deno.ts).
  if (!fromStdin) return run.words.join(" ");
  if (platform.stdinIsTerminal === true) {
    throw new ConfigError(`"acp-harness run" needs a prompt: as arguments, or on stdin with "-"`);
  }
  const text = await new Response(platform.stdin).text();
  if (text.trim() === "") throw new ConfigError(`"acp-harness run": the prompt on stdin is empty`);
  return text.replace(/\n$/, "");
}

/** The `mcpServers` array of an `--mcp-config` file (each entry checked by `session/new`). */
function mcpServersOf(value: unknown, file: string): McpServer[] {
  const servers = (value as { mcpServers?: unknown } | null)?.mcpServers;
  if (!Array.isArray(servers)) {
    throw new ConfigError(
      `--mcp-config "${file}": needs {"mcpServers": [...]}, an array as in session/new`,
    );
  }
  return servers as McpServer[];
}

/**
 * `acp-harness copy-sessions`: copies, then exits 0; 2 when a store cannot be opened, 1 when the
 * copy fails midway (what was copied stays; running it again completes it) or some sessions of
 * the source could not be read (the others are copied).
 */
async function copySessionsCommand(
  platform: CliPlatform,
  config: Config,
  logger: Logger,
  command: { readonly from: string; readonly to: string },
): Promise<number> {
  try {
    const { runCopySessions } = await loadCopySessionsCommand();
    const result = await runCopySessions({
      from: resolveLocation(command.from, platform.host),
      to: resolveLocation(command.to, platform.host),
      host: platform.host,
      logger,
      leaseTtlMs: settingsOf(config).store.leaseTtlMs,
      writeStderr: (text) => platform.writeStderr(text),
    });
    return result.unreadable.length > 0 ? 1 : 0;
  } catch (error) {
    platform.writeStderr(`acp-harness copy-sessions: ${(error as Error).message}\n`);
    return error instanceof ConfigError ? 2 : 1;
  }
}

/** Prints the model table (or JSON) of `acp-harness models`, after asking the providers. */
async function printModels(
  platform: CliPlatform,
  out: WritableStreamDefaultWriter<Uint8Array>,
  catalog: ModelCatalog,
  options: { readonly model: string; readonly json: boolean },
): Promise<void> {
  const discovery = await catalog.discover({ timeoutMs: DISCOVERY_TIMEOUT_MS });
  const { formatModelTable, modelsJson } = await loadModelsCommand();
  const listings = catalog.known();
  let text: string;
  if (options.json) {
    text = `${JSON.stringify(modelsJson(listings, options.model, discovery), null, 2)}\n`;
  } else {
    text = formatModelTable(listings, options.model);
    for (const result of discovery) {
      if (result.error !== undefined) {
        platform.writeStderr(
          `acp-harness: cannot list the ${result.provider} models: ${result.error}\n`,
        );
      }
    }
  }
  await out.write(new TextEncoder().encode(text));
  await out.close();
}

/** A composed server and how to close its store once the server has closed. */
interface ComposedServer {
  readonly server: AgentServer;
  /** Closes the session store (PostgreSQL: stops heartbeats, releases leases, closes the pool). */
  closeStore(): Promise<void>;
}

/**
 * Where a config keeps sessions: a PostgreSQL URL as given, else the JSONL directory (`--store
 * <dir>` relative to the working directory, else the data directory).
 *
 * @param config The merged config
 * @param host Gives the home and working directories
 * @returns A `postgres://` URL or an absolute directory
 */
export function storeLocation(config: Config, host: Host): string {
  return config.store === undefined
    ? dataDirectory(config, host)
    : resolveLocation(config.store, host);
}

/** A store location as given when it is a PostgreSQL URL or `memory:`, else an absolute directory. */
function resolveLocation(location: string, host: Host): string {
  if (isPostgresUrl(location) || location === MEMORY_STORE) return location;
  return absolutePath(location, host);
}

/** `path` made absolute against the process's working directory. */
function absolutePath(path: string, host: Host): string {
  return isAbsolutePath(path) ? path : normalizePath(`${host.cwd()}/${path}`);
}

/**
 * The settings of a config file with their relative paths resolved against the file's directory
 * (not the process's working directory: an editor may start the server anywhere). Program names
 * without a slash (looked up on `PATH`) stay as they are.
 */
function resolveFilePaths(settings: Partial<Config>, file: string): Partial<Config> {
  const dir = file.slice(0, file.lastIndexOf("/")) || "/";
  const resolve = (path: string): string =>
    isAbsolutePath(path) ? path : normalizePath(`${dir}/${path}`);
  const resolved: { -readonly [K in keyof Config]?: Config[K] } = { ...settings };
  if (settings.dataDir !== undefined) resolved.dataDir = resolve(settings.dataDir);
  if (settings.script !== undefined) resolved.script = resolve(settings.script);
  if (settings.tokenFile !== undefined) resolved.tokenFile = resolve(settings.tokenFile);
  if (settings.tenants !== undefined) resolved.tenants = resolve(settings.tenants);
  if (settings.record !== undefined) resolved.record = resolve(settings.record);
  if (settings.replay !== undefined) resolved.replay = resolve(settings.replay);
  if (settings.allowedRoots !== undefined) {
    resolved.allowedRoots = settings.allowedRoots.map(resolve);
  }
  const store = settings.store;
  if (store !== undefined && !isPostgresUrl(store) && store !== MEMORY_STORE) {
    resolved.store = resolve(store);
  }
  if (settings.agents !== undefined) {
    resolved.agents = Object.fromEntries(
      Object.entries(settings.agents).map(([name, agent]) => [
        name,
        agent.command.includes("/") ? { ...agent, command: resolve(agent.command) } : agent,
      ]),
    );
  }
  return resolved;
}

/** What the common `mkdir` failures mean for a directory the server needs. */
const DIRECTORY_PROBLEMS: Readonly<Record<string, string>> = {
  ENOTDIR: "a part of the path is a file",
  EEXIST: "it is a file",
  ENOENT: "cannot create it here",
  EACCES: "permission denied",
  EPERM: "permission denied",
  EROFS: "the file system is read-only",
  ENOSPC: "no space left",
};

/**
 * Makes sure `dir` is a directory the server can use (creating it and its parents), so that a
 * data directory under a file, or one that cannot be created, stops the start with one line
 * instead of failing the first prompt.
 */
async function usableDirectory(host: Host, dir: string, what: string): Promise<void> {
  try {
    await host.mkdir(dir);
  } catch (error) {
    const { code, message } = error as { code?: string; message?: string };
    const reason = code === undefined
      ? message ?? String(error)
      : `${DIRECTORY_PROBLEMS[code] ?? "cannot create it"} (${code})`;
    throw new ConfigError(`Cannot use ${what} "${dir}": ${reason}`);
  }
}

/** The agent server a config describes, with its store and the process supervisor started. */
async function composeServer(
  platform: CliPlatform,
  config: Config,
  catalog: ModelCatalog,
  logger: Logger,
  transport: "stdio" | "http",
  telemetry?: Telemetry,
): Promise<ComposedServer> {
  // Providers that list their own models (Ollama) are asked in the background: sessions created
  // before the answer offer the listed models only.
  void catalog.discover({ timeoutMs: DISCOVERY_TIMEOUT_MS });
  const dataDir = dataDirectory(config, platform.host);
  const location = storeLocation(config, platform.host);
  // Probed while the rest is set up (the store opened); a failure is seen once the store is open.
  const sandboxReady = commandSandbox(platform.host, config, [dataDir, location]);
  sandboxReady.catch(() => {});
  const [allowedRoots] = await Promise.all([
    config.allowedRoots === undefined
      ? undefined
      : canonicalRoots(platform.host, config.allowedRoots),
    usableDirectory(platform.host, dataDir, "the data directory"),
    location === dataDir || isPostgresUrl(location) || location === MEMORY_STORE
      ? undefined
      : usableDirectory(platform.host, location, "the store directory"),
  ]);
  // Canonical, as the sessions' roots are: worktrees and checkpoints are found (and left out of
  // the checkpoints) by their canonical paths.
  const canonicalData = await platform.host.realpath(dataDir);
  const settings = settingsOf(config);
  const opened = await openSessionStore({
    location,
    host: platform.host,
    logger,
    leaseTtlMs: settings.store.leaseTtlMs,
    commitTimeoutMs: settings.store.commitTimeoutMs,
  });
  logger.info("session store", { store: opened.description });
  let sandbox: CommandSandbox;
  try {
    sandbox = await sandboxReady;
  } catch (error) {
    await opened.close();
    throw error;
  }
  // Commands die with this process, even by SIGKILL: supervised from the first on. Reaping what a
  // killed predecessor left loads the process supervision (slow to load on Deno), so on stdio it
  // waits for the server's first idle moment with its sessions ready (`idleTask`): it delays
  // neither `initialize` nor the first session. HTTP starts reaping at once.
  let idle: (() => void) | undefined;
  const reapAfter = transport === "stdio"
    ? new Promise<void>((resolve) => idle = resolve)
    : undefined;
  void platform.host.superviseProcesses(`${dataDir}/processes`, reapAfter ? { reapAfter } : {})
    .then(
      (count) => {
        if (count > 0) logger.info("killed processes left by a server that died", { count });
      },
      (error) =>
        logger.warn("cannot reap processes left by earlier servers", { error: String(error) }),
    );
  void reapWorktrees(platform.host, canonicalData, opened, logger, reapAfter);
  if (sandbox.warning !== undefined) logger.warn(sandbox.warning);
  logger.info("command sandbox", {
    level: sandbox.level,
    network: sandbox.network,
    pidsLimit: sandbox.pidsLimit ?? "none",
  });
  void sandbox.reapStale().catch(() => {});
  // Every session gets the built-in tools (the default), and `delegate` when agents are configured.
  const toolsFor = delegatingToolsFor(config, platform.host, logger, catalog, sandbox);
  const server = createAgentServer({
    settings: settings.server,
    catalog,
    host: platform.host,
    logger,
    store: opened.store,
    attachments: opened.attachments,
    ...(toolsFor ? { toolsFor } : {}),
    ...(allowedRoots ? { allowedRoots } : {}),
    sandbox,
    dataDir: canonicalData,
    storeName: opened.description,
    ...(platform.defer ? { defer: platform.defer } : {}),
    ...(idle ? { idleTask: idle } : {}),
    // On stdio the one client names every path: checking them synchronously holds up no one else.
    blockingPathChecks: transport === "stdio",
    ...(telemetry ? { telemetry } : {}),
  });
  return { server, closeStore: () => opened.close() };
}

/**
 * The server's command sandbox (`--sandbox`, `--sandbox-network`, `--sandbox-pids`): probed at
 * start-up, in parallel with the rest. Hidden from commands besides the home's credentials: the
 * data directory, a store directory and the token file. A requested sandbox that cannot be set
 * up stops the start (exit 2).
 */
async function commandSandbox(
  host: Host,
  config: Config,
  directories: readonly string[],
): Promise<CommandSandbox> {
  const { setUpSandbox, SandboxUnavailableError } = await loadSandbox();
  const hide = directories.filter((dir) => isAbsolutePath(dir));
  if (config.tokenFile !== undefined) hide.push(absolutePath(config.tokenFile, host));
  try {
    return await setUpSandbox(host, {
      requested: config.sandbox,
      network: config.sandboxNetwork,
      pidsLimit: config.sandboxPids,
      children: config.sandboxChildren,
      hide,
    });
  } catch (error) {
    if (error instanceof SandboxUnavailableError) throw new ConfigError(error.message);
    throw error;
  }
}

/**
 * The tools of each session when the config lets this server delegate (agents configured, its
 * depth below `maxDelegationDepth`): the built-in tools and `delegate`; else `undefined` (the
 * built-in tools only).
 */
function delegatingToolsFor(
  config: Config,
  host: Host,
  logger: Logger,
  catalog: ModelCatalog,
  sandbox: CommandSandbox,
): ToolSetFactory | undefined {
  const depth = readDelegationDepth(host.env(DELEGATION_DEPTH_ENV));
  if (!mayDelegate(config, depth)) {
    if (Object.keys(config.agents).length > 0) {
      logger.info("delegation: no delegate tool at this depth", {
        depth,
        maxDelegationDepth: config.maxDelegationDepth,
      });
    }
    return undefined;
  }
  // What an agent's failure message must not quote: the server's keys and its token.
  const secrets = [
    ...secretValues(serverSecretEnv(catalog), (name) => host.env(name)),
    ...(config.token ? [config.token] : []),
  ];
  return async (info) => {
    const [{ builtinTools }, { delegateTool }] = await Promise.all([
      loadBuiltinTools(),
      loadDelegateTool(),
    ]);
    return [
      ...builtinTools(),
      delegateTool({
        agents: config.agents,
        // `--sandbox-children`: the agents run in the command sandbox, the session's roots theirs.
        processes: sandboxedProcesses(host, sandbox, {
          roots: [info.cwd, ...info.additionalDirectories],
        }),
        depth,
        secrets,
        disposer: info.disposer,
        // The session's logger, so that the delegate lines carry its connection's id.
        logger: info.logger ?? logger,
      }),
    ];
  };
}

/**
 * Serves ACP on stdio until stdin closes or a shutdown signal arrives: composes the server
 * (which store, which tools, which host), connects stdio to it, and shuts down.
 */
async function runStdioServer(
  platform: CliPlatform,
  config: Config,
  catalog: ModelCatalog,
  logger: Logger,
): Promise<number> {
  const observed = await startTelemetry(platform, config, logger);
  try {
    return await serveStdio(platform, config, catalog, logger, observed.telemetry);
  } finally {
    await observed.close();
  }
}

/** {@link runStdioServer} once its metrics (if any) are on. */
async function serveStdio(
  platform: CliPlatform,
  config: Config,
  catalog: ModelCatalog,
  logger: Logger,
  telemetry: Telemetry | undefined,
): Promise<number> {
  let drainOnInputEnd = (): Promise<void> => Promise.resolve();
  const stream = ndJsonStream(platform.stdout, platform.stdin, {
    maxMessageBytes: config.maxMessageBytes,
    ...(platform.defer ? { defer: platform.defer } : {}),
    onInvalid: (reason) => logger.warn("bad input", { reason }),
    onInputEnd: () => drainOnInputEnd(),
  });
  const { server, closeStore } = await composeServer(
    platform,
    config,
    catalog,
    logger,
    "stdio",
    telemetry,
  );
  const connection = server.connect(stream, { transport: "stdio" });
  drainOnInputEnd = () => {
    logger.info("stdin closed");
    return connection.drain();
  };
  logger.info("serving ACP on stdio", { version: VERSION, model: config.model });
  const stopListening = platform.onShutdownSignal(() => {
    logger.info("shutdown signal received");
    void server.close();
  });
  try {
    await shutDown(platform.host, connection, stream, logger);
    await closeStore();
  } finally {
    stopListening();
  }
  return 0;
}

/**
 * Serves ACP over HTTP and WebSocket until SIGINT or SIGTERM: checks the security settings,
 * binds the runtime's listener (`listening on <url>` goes to stderr), then on the signal stops
 * accepting, drains every connection (running turns end `cancelled`), and exits.
 */
async function runHttpServer(
  platform: CliPlatform,
  config: Config,
  catalog: ModelCatalog,
  logger: Logger,
): Promise<number> {
  if (!platform.serveHttp) throw new ConfigError("This runtime cannot serve HTTP");
  // The tenants' refusals are counted once the telemetry (started after the checks) is on.
  const counted: { telemetry?: Telemetry | undefined } = {};
  const refused = (tenant: string, limit: string): void =>
    counted.telemetry?.tenantRefusal?.(tenant, limit);
  const { token, allowedHosts, tenants } = await httpSecurity(platform.host, config, refused);
  const observed = await startTelemetry(platform, config, logger);
  counted.telemetry = observed.telemetry;
  try {
    return await serveOverHttp(platform, config, catalog, logger, {
      serveHttp: platform.serveHttp,
      token,
      allowedHosts,
      tenants,
      observed,
    });
  } finally {
    await observed.close();
  }
}

/** What {@link serveOverHttp} serves with. */
interface HttpServing {
  readonly serveHttp: ServeHttp;
  readonly token: string | undefined;
  readonly allowedHosts: readonly string[] | undefined;
  /** The tenants of `--tenants`, when given. */
  readonly tenants: TenantDirectory | undefined;
  readonly observed: Observability;
}

/** {@link runHttpServer} once the security settings are checked and metrics (if any) are on. */
async function serveOverHttp(
  platform: CliPlatform,
  config: Config,
  catalog: ModelCatalog,
  logger: Logger,
  serving: HttpServing,
): Promise<number> {
  const { token, allowedHosts, observed } = serving;
  const { metrics } = observed;
  const { server, closeStore } = await composeServer(
    platform,
    config,
    catalog,
    logger,
    "http",
    observed.telemetry,
  );
  const { createHttpTransport } = await loadHttpTransport();
  const { httpLimits, httpListen } = settingsOf(config);
  const transport = createHttpTransport({
    server,
    logger,
    security: {
      token,
      allowedOrigins: config.allowedOrigins,
      allowedHosts,
      ...(serving.tenants ? { tenants: serving.tenants } : {}),
    },
    limits: httpLimits,
    ...(metrics ? { metrics: metrics.telemetry } : {}),
  });
  const served: ServedHttp = {
    server,
    transport,
    listener: await listenHttp(serving.serveHttp, transport, httpListen, closeStore),
    closeStore,
  };
  platform.writeStderr(`listening on ${served.listener.url}\n`);
  logger.info("serving ACP over HTTP", { version: VERSION, model: config.model });
  let stopListening = (): void => {};
  const signalled = new Promise<void>((resolve) => {
    stopListening = platform.onShutdownSignal(() => resolve());
  });
  const stopReloading = await reloadOnSignal(platform, config, serving.tenants, transport, logger);
  try {
    await signalled;
    logger.info("shutdown signal received");
    stopReloading();
    await closeHttpServer(platform.host, served, logger);
  } finally {
    // Listening to the end: a second signal during the drain must not end the server early.
    stopListening();
  }
  return 0;
}

/** What `serve --http` runs, for {@link closeHttpServer}. */
interface ServedHttp {
  readonly server: AgentServer;
  readonly transport: HttpTransport;
  readonly listener: HttpListener;
  closeStore(): Promise<void>;
}

/**
 * With `--tenants`, reads the tenants file again on SIGHUP (see `TenantsReloader`).
 *
 * @returns Stops listening
 */
async function reloadOnSignal(
  platform: CliPlatform,
  config: Config,
  tenants: TenantDirectory | undefined,
  transport: HttpTransport,
  logger: Logger,
): Promise<() => void> {
  const file = config.tenants;
  if (tenants === undefined || file === undefined) return () => {};
  if (!platform.onReloadSignal) {
    logger.warn("this runtime has no SIGHUP: the tenants file is read at start-up only");
    return () => {};
  }
  const { TenantsReloader } = await loadTenantsFile();
  const reloader = new TenantsReloader({
    host: platform.host,
    file: absolutePath(file, platform.host),
    tenants,
    closeRevoked: (holds) => transport.closeRevoked(holds),
    logger,
  });
  return platform.onReloadSignal(() => void reloader.reload());
}

/**
 * The bearer token (or the tenants) and the Host headers `serve --http` accepts. An address other
 * than loopback needs a token (or tenants) and `--allowed-roots` (or every tenant's
 * `allowedRoots`): without them any client that reaches the port could work anywhere on the
 * machine. `--tenants` replaces the single token: both together are refused.
 */
async function httpSecurity(
  host: Host,
  config: Config,
  refused?: (tenant: string, limit: string) => void,
): Promise<{
  token: string | undefined;
  allowedHosts: readonly string[] | undefined;
  tenants: TenantDirectory | undefined;
}> {
  const { isLoopback, loopbackHosts } = await loadHttpSecurity();
  if (config.tenants !== undefined && (config.token ?? config.tokenFile) !== undefined) {
    throw new ConfigError(
      `Option "--tenants" replaces "--token" and "--token-file": give the tenants file alone ` +
        "(a tenant of its own can hold that token)",
    );
  }
  const tenants = config.tenants === undefined
    ? undefined
    : await (await loadTenantsFile()).openTenants(
      host,
      absolutePath(config.tenants, host),
      refused,
    );
  const token = config.token ??
    (config.tokenFile ? await readToken(host, config.tokenFile) : undefined);
  if (!isLoopback(config.host) && tenants !== undefined) {
    if (config.allowedRoots === undefined && !tenants.allHaveRoots) {
      throw new ConfigError(
        `Refusing to bind ${config.host} with a tenant without allowedRoots and no ` +
          `--allowed-roots: say which directories each tenant may open sessions in`,
      );
    }
  } else if (!isLoopback(config.host)) {
    if (token === undefined) {
      throw new ConfigError(
        `Refusing to bind ${config.host} without a bearer token: pass --token-file <file> ` +
          `(or --token, ACP_HARNESS_TOKEN), or bind 127.0.0.1`,
      );
    }
    if (config.allowedRoots === undefined) {
      throw new ConfigError(
        `Refusing to bind ${config.host} without --allowed-roots: say which directories ` +
          `HTTP clients may open sessions in`,
      );
    }
  }
  return { token, allowedHosts: loopbackHosts(config.host), tenants };
}

/**
 * Binds the runtime's listener to the configured address; when it cannot, closes what was opened
 * for it and says why in a {@link ConfigError} (a port in use is a start-up problem, exit 2).
 */
async function listenHttp(
  serveHttp: ServeHttp,
  transport: HttpTransport,
  options: ListenOptions,
  closeStore: () => Promise<void>,
): Promise<HttpListener> {
  try {
    return await serveHttp(transport, options);
  } catch (error) {
    await transport.close();
    await closeStore();
    throw new ConfigError(
      `Cannot listen on ${options.hostname}:${options.port}: ${(error as Error).message}`,
    );
  }
}

/**
 * Shuts `serve --http` down: stops accepting at once, gives what is open the grace period to
 * finish (turns that do not settle in it are left), stops the processes started, then closes the
 * transport, the listener and the store.
 */
async function closeHttpServer(host: Host, served: ServedHttp, logger: Logger): Promise<void> {
  const listenerClosed = served.listener.close(SHUTDOWN_GRACE_MS * 2);
  const grace = new AbortController();
  try {
    const settled = await Promise.race([
      served.server.close().then(() => true),
      abortableDelay(SHUTDOWN_GRACE_MS, grace.signal).then(() => false),
    ]);
    if (!settled) logger.warn("turns did not settle in time; exiting anyway");
    await host.stopProcesses({ graceMs: SHUTDOWN_KILL_GRACE_MS });
    await served.transport.close();
    await listenerClosed;
    await served.closeStore();
  } finally {
    grace.abort();
  }
}

/** The first line of a token file, without surrounding white space. */
async function readToken(host: Host, file: string): Promise<string> {
  let text: string;
  try {
    text = await host.readTextFile(file);
  } catch (error) {
    throw new ConfigError(`Cannot read the token file "${file}": ${(error as Error).message}`);
  }
  const token = (text.split("\n")[0] ?? "").trim();
  if (token === "") throw new ConfigError(`The token file "${file}" is empty`);
  return token;
}

/** The real paths of the allowed roots, each an existing directory. */
async function canonicalRoots(host: Host, roots: readonly string[]): Promise<string[]> {
  const canonical: string[] = [];
  for (const root of roots) {
    const path = isAbsolutePath(root) ? root : normalizePath(`${host.cwd()}/${root}`);
    const info = await host.stat(path).catch(() => undefined);
    if (!info?.isDirectory) {
      throw new ConfigError(`Allowed root "${root}" is not an existing directory`);
    }
    canonical.push(await host.realpath(path));
  }
  return canonical;
}

/**
 * Waits for the connection to go away, then gives its turns a grace period to settle (a turn that
 * ignores cancellation must not keep the process alive), stops every process group started
 * (SIGTERM, SIGKILL 1 s later) and lets the output drain.
 */
async function shutDown(
  host: Host,
  connection: AgentServerConnection,
  stream: NdJsonStream,
  logger: Logger,
): Promise<void> {
  const grace = new AbortController();
  const processesStopped = connection.disconnected.then(() =>
    host.stopProcesses({ graceMs: SHUTDOWN_KILL_GRACE_MS })
  );
  try {
    const settled = await Promise.race([
      connection.closed.then(() => true),
      connection.disconnected.then(() => abortableDelay(SHUTDOWN_GRACE_MS, grace.signal))
        .then(() => false),
    ]);
    if (!settled) logger.warn("turns did not settle in time; exiting anyway");
    await processesStopped;
    await Promise.race([stream.drained(), abortableDelay(SHUTDOWN_GRACE_MS, grace.signal)]);
  } finally {
    grace.abort();
  }
}

/**
 * Removes the session worktrees a server that died left (those of sessions it never recorded)
 * and reports the directories under `worktrees/` nobody knows, once `after` settles. Records
 * written since this server started are left alone: they may be sessions being made.
 */
async function reapWorktrees(
  host: Host,
  dataDir: string,
  opened: { readonly store: SessionStore; readonly description: string },
  logger: Logger,
  after: Promise<void> | undefined,
): Promise<void> {
  const before = host.now();
  await after;
  try {
    const worktrees = await import("../git/worktree.ts");
    const { removed, unknown } = await worktrees.reapWorktrees(
      { processes: host, files: host },
      {
        dataDir,
        before,
        exists: (id) => opened.store.exists(id),
        self: { host: host.hostname(), store: opened.description },
        isAlive: (pid) => host.isProcessAlive(pid),
      },
    );
    if (removed.length > 0) {
      logger.info("removed worktrees of sessions a server that died never recorded", {
        count: removed.length,
        worktrees: removed.map((info) => info.path),
      });
    }
    if (unknown.length > 0) {
      logger.warn("directories under worktrees/ that belong to no session were left alone", {
        directories: unknown,
      });
    }
  } catch (error) {
    logger.warn("cannot reap the worktrees left by earlier servers", { error: String(error) });
  }
}

/**
 * The data directory a config names: `--data-dir` (relative to the working directory), else
 * `~/.acp-harness`.
 *
 * @param config The merged config
 * @param host Gives the home and working directories
 * @returns An absolute path
 */
export function dataDirectory(config: Config, host: Host): string {
  const dir = config.dataDir ?? `${host.homeDir()}/.acp-harness`;
  return isAbsolutePath(dir) ? dir : normalizePath(`${host.cwd()}/${dir}`);
}

/** Options for {@link createCatalog}. */
export interface CreateCatalogOptions {
  /** The scripted model's script, if any. */
  readonly script?: Script | undefined;
  /** Receives the model request and model list lines. */
  readonly logger?: Logger | undefined;
  /** The cassettes of `--record` and `--replay`: their fetch serves every provider. */
  readonly cassettes?: Cassettes | undefined;
}

/**
 * The model catalog a config describes: the built-in providers (read from the host's
 * environment), the config file's providers and model facts, the script, the default model.
 *
 * @param config The merged config
 * @param host Gives the environment
 * @param options The script and the logger
 * @returns The catalog
 */
export function createCatalog(
  config: Config,
  host: Host,
  options: CreateCatalogOptions = {},
): ModelCatalog {
  const { script, logger, cassettes } = options;
  // Per-request lines are debug lines; below debug the wrapper would only cost time.
  const logRequests = config.logLevel === "debug";
  const hostEnv = (name: string): string | undefined => host.env(name);
  let env = hostEnv;
  if (cassettes?.offline) {
    // A replay sends nothing: a provider needs no key, and one is never read for it.
    const keyNames = new Set(providerKeyNames(config));
    env = (name) => keyNames.has(name) ? hostEnv(name) ?? "replayed-without-a-key" : hostEnv(name);
  }
  const providers: Record<string, ProviderSpec> = builtinProviders(env);
  for (const [id, provider] of Object.entries(config.providers)) {
    providers[id] = { ...provider, configured: true, defaults: providers[id]?.defaults ?? {} };
  }
  return new ModelCatalog({
    providers,
    models: config.models,
    defaultModel: config.model,
    env,
    ...(cassettes ? { fetch: cassettes.fetch } : {}),
    ...(script ? { script } : {}),
    ...(logger ? { logger, logRequests } : {}),
  });
}

async function readJson(host: Host, file: string, origin = ""): Promise<unknown> {
  let text: string;
  try {
    text = await host.readTextFile(file);
  } catch (error) {
    throw new ConfigError(`Cannot read "${file}"${origin}: ${(error as Error).message}`);
  }
  try {
    const { parseJsonText } = await loadJsonText();
    return parseJsonText(text, file);
  } catch (error) {
    throw new ConfigError((error as Error).message);
  }
}
