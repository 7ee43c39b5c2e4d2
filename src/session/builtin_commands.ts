/**
 * The slash commands every session has: `/compact`, `/model`, `/mode` and `/clear`; and, with
 * checkpoints on, `/checkpoints`, `/undo` and `/restore N` (see `./checkpoints.ts`).
 *
 * @module
 */
import type { StopReason } from "../agent/run_turn.ts";
import { PERMISSION_MODES } from "../permission/mode.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import type { Logger } from "../log/logger.ts";
import type { Selection } from "./config_options.ts";
import type { SessionOutput } from "./outbox.ts";
import type { SessionCommand } from "../tools/session_commands.ts";
import type { PromptTurn } from "./prompt_turn.ts";
import type { SessionCheckpoints } from "./checkpoints.ts";

/** The built-in commands, as the client is offered them. */
export const BUILTIN_COMMANDS: readonly SessionCommand[] = [
  {
    name: "compact",
    description: "Summarize the earlier conversation to free the model's context",
  },
  {
    name: "model",
    description: "Switch the model from the next prompt on; alone, list the models",
    hint: "model id",
  },
  {
    name: "mode",
    description: "Switch the permission mode (ask, auto or read-only); alone, list them",
    hint: PERMISSION_MODES.join(" | "),
  },
  {
    name: "clear",
    description: "Start the model's context afresh (the session and its history stay)",
  },
];

/** What a built-in command works on. */
export interface BuiltinCommandContext {
  readonly sessionId: string;
  readonly catalog: Pick<ModelCatalog, "list" | "resolve">;
  readonly turns: Pick<PromptTurn, "compactNow" | "clear">;
  readonly output: SessionOutput;
  readonly logger: Logger;
  /** The session's checkpoints (`/checkpoints`, `/undo`, `/restore`). */
  readonly checkpoints?: Pick<SessionCheckpoints, "list" | "undo" | "restoreTo">;
  /** The selection the command runs with. */
  readonly pinned: Selection;
  /** Changes a config option and tells the client (throws `ConfigValueError` for a bad value). */
  setOption(configId: "model" | "mode", value: string): void;
}

/**
 * Runs a built-in command: records what the user typed, does it, and answers with a short agent
 * message (recorded as a note, which the client sees again on load and the model never sees).
 *
 * @param name The command (one of {@link BUILTIN_COMMANDS})
 * @param input What followed the name, trimmed
 * @param text The prompt as typed
 * @param context What it works on
 * @param signal Aborted when the prompt is cancelled
 * @returns The prompt's stop reason
 * @throws {ConfigValueError} For `/model` or `/mode` with a value that is not offered
 */
export async function runBuiltinCommand(
  name: string,
  input: string,
  text: string,
  context: BuiltinCommandContext,
  signal: AbortSignal,
): Promise<StopReason> {
  const { logger, sessionId } = context;
  logger.info("slash command", { sessionId, command: name });
  let reply: string | undefined;
  switch (name) {
    case "model":
      reply = input === "" ? modelList(context) : switched(context, "model", input);
      break;
    case "mode":
      reply = input === ""
        ? `Permission mode: ${context.pinned.mode}. Modes: ${PERMISSION_MODES.join(", ")}.`
        : switched(context, "mode", input);
      break;
    case "clear":
      record(context, text);
      context.turns.clear(context.pinned);
      reply = "Context cleared: the model starts afresh from the next prompt. " +
        "The session's history stays in its log.";
      break;
    case "compact": {
      record(context, text);
      const outcome = await context.turns.compactNow(context.pinned, signal);
      if (outcome === "cancelled" || signal.aborted) return finish(context, undefined, "cancelled");
      if (outcome === "skipped") reply = "Nothing to compact yet.";
      // Compacted or failed: the compaction told the user already.
      return finish(context, reply, "end_turn");
    }
    case "checkpoints":
    case "undo":
    case "restore": {
      record(context, text);
      const reply = await checkpointCommand(name, input, context, signal);
      if (signal.aborted) return finish(context, undefined, "cancelled");
      return finish(context, reply, "end_turn");
    }
    default:
      throw new RangeError(`not a built-in command: ${name}`);
  }
  if (name !== "clear") record(context, text);
  return finish(context, reply, "end_turn");
}

/** Runs `/checkpoints`, `/undo` or `/restore N`; a cancel ends it with no reply. */
async function checkpointCommand(
  name: "checkpoints" | "undo" | "restore",
  input: string,
  context: BuiltinCommandContext,
  signal: AbortSignal,
): Promise<string | undefined> {
  const { checkpoints } = context;
  if (!checkpoints) {
    return "Checkpoints are off for this server (--checkpoints=off, or no data directory).";
  }
  try {
    if (name === "checkpoints") return await checkpoints.list(signal);
    if (name === "undo") return await checkpoints.undo(signal);
    return await checkpoints.restoreTo(input, signal);
  } catch (error) {
    if (signal.aborted) return undefined;
    context.logger.warn("checkpoint command failed", { sessionId: context.sessionId, error });
    return `/${name} failed: ${error instanceof Error ? error.message : String(error)}`;
  }
}

/**
 * Records the command as the user typed it: the client has it already, and is shown it again as
 * the user's message on load.
 */
function record(context: BuiltinCommandContext, text: string): void {
  context.output.record([{ type: "command", messageId: crypto.randomUUID(), text }], false);
}

/** Sends and records the reply, hands everything over and ends the command's turn. */
function finish(
  context: BuiltinCommandContext,
  reply: string | undefined,
  stopReason: StopReason,
): StopReason {
  const { output } = context;
  if (reply !== undefined) {
    const messageId = crypto.randomUUID();
    output.record([{ type: "note", messageId, text: reply }], true);
    output.send({
      sessionUpdate: "agent_message_chunk",
      messageId,
      content: { type: "text", text: reply },
    });
  }
  output.flush();
  return stopReason;
}

function switched(
  context: BuiltinCommandContext,
  configId: "model" | "mode",
  value: string,
): string {
  context.setOption(configId, value);
  if (configId === "mode") return `Permission mode set to ${value}.`;
  const { info } = context.catalog.resolve(value);
  return `Model set to ${info.name} (${info.id}) from the next prompt on.`;
}

function modelList(context: BuiltinCommandContext): string {
  const lines = context.catalog.list().map((model) =>
    `${model.id === context.pinned.model ? "* " : "  "}${model.id}: ${model.name}`
  );
  return `Models (* is this session's):\n${lines.join("\n")}`;
}
