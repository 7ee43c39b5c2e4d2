/**
 * `acp-harness export-script SESSION_ID`: a recorded session's model steps as a script of the
 * `scripted` model (`src/llm/scripted.ts`, docs/models.md), printed on stdout, so that a session
 * once run against a real model becomes a fixture: the same prompts sent to a server started with
 * `--model scripted --script <file>` get the same tool calls, messages and thoughts.
 *
 * How the log maps to steps (`src/store/session_store.ts`):
 *
 * - Each `assistant` record is one model step that committed: its `reasoning` is the step's
 *   `thought`, its `text` the `text`, its `toolCalls` the tool calls (ids, names, arguments: an
 *   object when they are a JSON object, else the raw string as the model sent it). The `usage`
 *   record that follows it is the step's `usage`. A step with tool calls finishes `tool-calls`;
 *   the last step of a turn that ended `max_tokens` or `refusal` (and not on a budget, which
 *   leaves a `note` after it) finishes so.
 * - A compaction that summarized the conversation made a model request of its own, which the
 *   scripted model answers from the same script (the summary request of a session takes its
 *   session's next step): it becomes a step whose text is the summary, with the usage record
 *   that follows the compaction. A compaction that only pruned tool results made no request
 *   and gives no step. A compaction set off by the provider's "context too long" error is
 *   preceded by a `context-overflow` error step, so the replay fails, compacts and retries the
 *   same way. Compactions by threshold recur in the replay when the scripted model is given the
 *   recorded model's context window (`models.scripted.contextWindow` in the config file);
 *   {@link ExportedScript.contextWindow} says it.
 * - A turn that failed on a model request (`turn_end` with `error`) ends with an error step
 *   carrying the provider's message, so the replay fails there too and the later steps stay
 *   aligned. Requests the turn survived (retried attempts, failed compactions) and cancelled
 *   requests leave nothing in the log and give no step.
 *
 * @module
 */
import type { Host } from "../host/host.ts";
import type { Logger } from "../log/logger.ts";
import type { ScriptStep } from "../llm/scripted.ts";
import type { Config } from "../config/config.ts";
import { ConfigError } from "../config/value_types.ts";
import { MEMORY_STORE, openSessionStore } from "../store/open_session_store.ts";
import { loadRecordStream } from "../store/record_stream.ts";
import type { StoredEvent } from "../store/session_store.ts";
import { CorruptSessionLogError, InvalidSessionIdError } from "../store/store_errors.ts";
import { settingsOf } from "./cli_settings.ts";

/** A step being built: the script's step type with its fields writable. */
type Draft = { -readonly [K in keyof ScriptStep]: ScriptStep[K] };

/** A failed model request as the turn's failure records it (`String(turnError)`). */
const TURN_ERROR = /^TurnError: Model request failed \([^)]*\)(?: \(after \d+ attempts\))?: /;

/** The provider error a replayed overflow compaction answers, as the step's message. */
const OVERFLOW_MESSAGE = "context too long (recorded: the conversation was compacted after it)";

/** A recorded session as a script, with what a replay needs to know beside it. */
export interface ExportedScript {
  /** The model steps, in the order the session's model requests took them. */
  readonly steps: readonly ScriptStep[];
  /** Compactions of the session set off by the context threshold (each a step when summarized). */
  readonly thresholdCompactions: number;
  /**
   * The context window the session's requests were measured against (the latest usage record
   * that says it): what the scripted model needs for threshold compactions to recur.
   */
  readonly contextWindow?: number;
}

/**
 * Builds the script of a session's records as they are read, a batch at a time.
 *
 * @example The steps of one turn with a tool call
 * ```ts
 * import assert from "node:assert/strict";
 * import { ScriptExporter } from "./export_script_command.ts";
 * const exporter = new ScriptExporter();
 * exporter.add([
 *   { type: "turn_start" },
 *   { type: "user", messageId: "m1", content: [{ type: "text", text: "read a.txt" }] },
 *   {
 *     type: "assistant",
 *     text: "",
 *     reasoning: "Let me look.",
 *     toolCalls: [{ id: "c1", name: "read_file", arguments: '{"path":"a.txt"}' }],
 *   },
 *   { type: "usage", usage: { input: 100, output: 10 }, used: 110 },
 *   { type: "assistant", text: "It says alpha." },
 *   { type: "turn_end", stopReason: "end_turn" },
 * ]);
 * assert.deepEqual(exporter.finish().steps, [
 *   {
 *     thought: "Let me look.",
 *     toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }],
 *     usage: { input: 100, output: 10 },
 *     finish: "tool-calls",
 *   },
 *   { text: "It says alpha." },
 * ]);
 * ```
 */
export class ScriptExporter {
  readonly #steps: Draft[] = [];
  /** The step the next usage record belongs to; `null`: a request-less one to skip. */
  #usageFor: Draft | null | undefined;
  /** The turn's latest step, when it was a step of the turn loop (not a summary). */
  #lastOfTurn: Draft | undefined;
  /** A note (a budget's message) came after {@link #lastOfTurn}. */
  #noteAfter = false;
  #thresholdCompactions = 0;
  #contextWindow: number | undefined;

  /**
   * Adds the next records, in log order.
   *
   * @param records Stored records (or events: `seq` and `time` are not read)
   */
  add(records: readonly StoredEvent[]): void {
    for (const record of records) this.#add(record);
  }

  /**
   * The script so far.
   *
   * @returns The steps, the threshold compactions and the context window
   */
  finish(): ExportedScript {
    return {
      steps: this.#steps.map(ordered),
      thresholdCompactions: this.#thresholdCompactions,
      ...(this.#contextWindow === undefined ? {} : { contextWindow: this.#contextWindow }),
    };
  }

  #add(record: StoredEvent): void {
    switch (record.type) {
      case "turn_start":
        this.#usageFor = undefined;
        this.#lastOfTurn = undefined;
        break;
      case "assistant": {
        const step = this.#push(assistantStep(record));
        this.#lastOfTurn = step;
        this.#noteAfter = false;
        break;
      }
      case "compaction":
        this.#compaction(record);
        break;
      case "usage":
        if (record.size !== undefined) this.#contextWindow = record.size;
        if (this.#usageFor) this.#usageFor.usage = usageOf(record.usage);
        this.#usageFor = undefined;
        break;
      case "note":
        this.#noteAfter = true;
        break;
      case "turn_end":
        this.#turnEnd(record);
        break;
      default:
        break;
    }
  }

  #push(step: Draft): Draft {
    this.#steps.push(step);
    this.#usageFor = step;
    return step;
  }

  #compaction(record: Extract<StoredEvent, { type: "compaction" }>): void {
    if (record.reason === "threshold") this.#thresholdCompactions++;
    if (record.reason === "overflow") {
      this.#steps.push({ error: { message: OVERFLOW_MESSAGE, kind: "context-overflow" } });
    }
    // The usage record after a compaction is its summary request's, or all zeros without one.
    if (record.summary !== undefined && record.replaced > 0) this.#push({ text: record.summary });
    else this.#usageFor = null;
    this.#lastOfTurn = undefined;
  }

  #turnEnd(record: Extract<StoredEvent, { type: "turn_end" }>): void {
    const last = this.#lastOfTurn;
    const { stopReason } = record;
    if (last && !this.#noteAfter && (stopReason === "max_tokens" || stopReason === "refusal")) {
      last.finish = stopReason === "max_tokens" ? "max-tokens" : "refusal";
    }
    const failed = stopReason === "error" ? TURN_ERROR.exec(record.error ?? "") : null;
    if (failed) {
      this.#steps.push({ error: { message: (record.error ?? "").slice(failed[0].length) } });
    }
    this.#usageFor = undefined;
    this.#lastOfTurn = undefined;
  }
}

/** A step with its keys in the order of the script format (docs/models.md), for reading. */
function ordered(step: Draft): ScriptStep {
  const { thought, text, toolCalls, usage, finish, error } = step;
  return {
    ...(thought === undefined ? {} : { thought }),
    ...(text === undefined ? {} : { text }),
    ...(toolCalls === undefined ? {} : { toolCalls }),
    ...(usage === undefined ? {} : { usage }),
    ...(finish === undefined ? {} : { finish }),
    ...(error === undefined ? {} : { error }),
  };
}

/** The step of an assistant record (its usage comes with the next usage record). */
function assistantStep(record: Extract<StoredEvent, { type: "assistant" }>): Draft {
  const calls = record.toolCalls ?? [];
  return {
    ...(record.reasoning ? { thought: record.reasoning } : {}),
    ...(record.text ? { text: record.text } : {}),
    ...(calls.length > 0
      ? {
        toolCalls: calls.map((call) => ({
          id: call.id,
          name: call.name,
          arguments: argumentsOf(call.arguments),
        })),
        finish: "tool-calls" as const,
      }
      : {}),
  };
}

/**
 * A call's arguments for the script: the JSON object they are (more readable, and the tool gets
 * the same input), else the raw text (malformed, or not an object), which the replay sends as is.
 */
function argumentsOf(raw: string): string | Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(raw);
    if (value !== null && typeof value === "object" && !Array.isArray(value)) {
      return value as Record<string, unknown>;
    }
  } catch {
    // Kept as the model sent it.
  }
  return raw;
}

/** A usage record's usage with only the fields a script step takes. */
function usageOf(
  usage: Extract<StoredEvent, { type: "usage" }>["usage"],
): NonNullable<ScriptStep["usage"]> {
  const { input, output, cacheRead, cacheWrite, reasoning } = usage;
  return {
    input,
    output,
    ...(cacheRead === undefined ? {} : { cacheRead }),
    ...(cacheWrite === undefined ? {} : { cacheWrite }),
    ...(reasoning === undefined ? {} : { reasoning }),
  };
}

/** What {@link exportScriptCommand} needs of the command line's platform. */
export interface ExportScriptPlatform {
  /** The operating system (the JSONL store reads through it). */
  readonly host: Host;
  /** Receives the script. */
  readonly stdout: WritableStream<Uint8Array>;
  /** Writes diagnostics (stderr). */
  writeStderr(text: string): void;
}

/** Options for {@link exportScriptCommand}. */
export interface ExportScriptCommandOptions {
  /** The streams and the host. */
  readonly platform: ExportScriptPlatform;
  /** The merged config (the store's lease expiry). */
  readonly config: Config;
  /** Where the store reports. */
  readonly logger: Logger;
  /** The store: a `postgres://` URL or an absolute JSONL data directory. */
  readonly location: string;
  /** The session to export. */
  readonly sessionId: string;
}

/**
 * Runs `acp-harness export-script SESSION_ID`: reads the session from the store (without taking
 * its lease: a server may be running it), prints its script as pretty JSON (a plain array of
 * steps, what `--script` reads) and exits 0; 2 when the session is not in the store (a one-line
 * message naming the id) or the store cannot be opened, 1 when its log cannot be read.
 *
 * @example Exporting a session of a JSONL data directory
 * ```ts
 * import assert from "node:assert/strict";
 * import { exportScriptCommand } from "./export_script_command.ts";
 * import { DEFAULT_CONFIG } from "../config/config.ts";
 * import { JsonlSessionStore } from "../store/jsonl_session_store.ts";
 * import { NodeHost } from "../host/node_host.ts";
 * import { nullLogger } from "../log/logger.ts";
 * const host = new NodeHost();
 * const dataDir = `${host.env("TMPDIR") ?? "/tmp"}/acp-harness-doc-${crypto.randomUUID()}`;
 * await host.mkdir(dataDir);
 * try {
 *   const store = new JsonlSessionStore({ host, dataDir });
 *   const id = crypto.randomUUID();
 *   const createdAt = new Date().toISOString();
 *   await store.create({ version: 1, id, cwd: "/work", additionalDirectories: [], createdAt });
 *   await store.append(id, [
 *     { type: "turn_start" },
 *     { type: "user", messageId: "m1", content: [{ type: "text", text: "hi" }] },
 *     { type: "assistant", text: "hello" },
 *     { type: "turn_end", stopReason: "end_turn" },
 *   ], { sync: true });
 *   let out = "";
 *   const stdout = new WritableStream<Uint8Array>({
 *     write: (bytes) => void (out += new TextDecoder().decode(bytes)),
 *   });
 *   const platform = { host, stdout, writeStderr: () => {} };
 *   const options = { platform, config: DEFAULT_CONFIG, logger: nullLogger, location: dataDir };
 *   assert.equal(await exportScriptCommand({ ...options, sessionId: id }), 0);
 *   assert.equal(out, '[\n  {\n    "text": "hello"\n  }\n]\n');
 *   assert.equal(await exportScriptCommand({ ...options, sessionId: "no-such-session" }), 2);
 * } finally {
 *   await host.remove(dataDir);
 * }
 * ```
 *
 * @param options The platform, the config, the logger, the store location and the session id
 * @returns The exit code
 */
export async function exportScriptCommand(options: ExportScriptCommandOptions): Promise<number> {
  const { platform, sessionId } = options;
  const fail = (message: string, code: number): number => {
    platform.writeStderr(`acp-harness export-script: ${message}\n`);
    return code;
  };
  let exported: ExportedScript;
  try {
    exported = await exportSession(options);
  } catch (error) {
    if (error instanceof ConfigError || error instanceof InvalidSessionIdError) {
      return fail(error.message, 2);
    }
    if (error instanceof CorruptSessionLogError) {
      return fail(`Cannot read session "${sessionId}": ${error.reason}`, 1);
    }
    return fail(`Cannot export session "${sessionId}": ${(error as Error).message ?? error}`, 1);
  }
  const writer = platform.stdout.getWriter();
  try {
    await writer.write(
      new TextEncoder().encode(`${JSON.stringify(exported.steps, null, 2)}\n`),
    );
    await writer.close();
  } finally {
    writer.releaseLock();
  }
  if (exported.thresholdCompactions > 0) {
    const window = exported.contextWindow === undefined
      ? "the recorded model's context window"
      : `${exported.contextWindow}`;
    platform.writeStderr(
      `acp-harness export-script: the session was compacted ${exported.thresholdCompactions} ` +
        `time(s) at the context threshold; for the replay to compact there too, give the ` +
        `scripted model its window: "models": {"scripted": {"contextWindow": ${window}}}\n`,
    );
  }
  return 0;
}

/** Opens the store, reads the session into its script, closes the store. */
async function exportSession(options: ExportScriptCommandOptions): Promise<ExportedScript> {
  const { platform, location, sessionId } = options;
  if (location === MEMORY_STORE) {
    throw new ConfigError(
      "export-script reads a store that outlives the server: memory: keeps nothing after exit",
    );
  }
  const opened = await openSessionStore({
    location,
    host: platform.host,
    logger: options.logger,
    leaseTtlMs: settingsOf(options.config).store.leaseTtlMs,
  });
  try {
    const stream = await loadRecordStream(opened.store, sessionId);
    if (stream === undefined) {
      throw new ConfigError(`Cannot find session "${sessionId}" in ${opened.description}`);
    }
    const exporter = new ScriptExporter();
    try {
      for await (const batch of stream.batches) exporter.add(batch);
    } finally {
      await stream.close();
    }
    return exporter.finish();
  } finally {
    await opened.close();
  }
}
