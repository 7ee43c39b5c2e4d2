/**
 * A session's selection (model, effort, mode) and the config options that change it.
 *
 * @module
 */
import type { PermissionMode } from "../permission/mode.ts";
import type { ModelCatalog, ModelInfo } from "../llm/catalog.ts";
import type {
  SessionConfigOption,
  SessionModeState,
  SessionUpdate,
} from "../transport/acp_types.ts";
import type { StoredEvent } from "../store/session_store.ts";
import type { CommandSandbox } from "../sandbox/command_sandbox.ts";
import { type SandboxLevel, sandboxTightness } from "../sandbox/sandbox.ts";
import {
  buildConfigOptions,
  buildModeState,
  DEFAULT_EFFORT,
  effortValues,
  initialEffort,
  type SandboxChoice,
  type Selection,
} from "./config_options.ts";

/** Thrown for an unknown config option or value (maps to -32602). */
export class ConfigValueError extends RangeError {
  /** @param message Names the option and the accepted values */
  constructor(message: string) {
    super(message);
    this.name = "ConfigValueError";
  }
}

/** What a change of a config option produced. */
export interface SelectionChange {
  /** The complete option list after the change. */
  readonly options: SessionConfigOption[];
  /** The updates that tell the client, in order. */
  readonly updates: readonly SessionUpdate[];
}

/**
 * The model, mode, effort and sandbox a session runs with, validated against the catalog and the
 * server's sandbox.
 */
export class SessionSelection {
  readonly #catalog: Pick<ModelCatalog, "info" | "list">;
  readonly #sandbox: CommandSandbox | undefined;
  #selection: Selection;

  /**
   * @param selection The initial selection
   * @param catalog The models offered
   * @param sandbox The server's sandbox (the `sandbox` option is offered with one)
   */
  constructor(
    selection: Selection,
    catalog: Pick<ModelCatalog, "info" | "list">,
    sandbox?: CommandSandbox,
  ) {
    this.#selection = selection;
    this.#catalog = catalog;
    this.#sandbox = sandbox;
  }

  /** The current selection (a prompt pins it at admission). */
  get current(): Selection {
    return this.#selection;
  }

  /** The selected model's facts. */
  currentModel(): ModelInfo | undefined {
    return this.#catalog.info(this.#selection.model);
  }

  /** The complete config option list. */
  configOptions(): SessionConfigOption[] {
    const sandbox: SandboxChoice | undefined = this.#sandbox
      ? { current: sandboxLevel(this.#selection, this.#sandbox), levels: this.#sandbox.levels() }
      : undefined;
    return buildConfigOptions(this.#selection, this.#catalog.list(), this.currentModel(), sandbox);
  }

  /** The mode state, in sync with the `mode` option. */
  modes(): SessionModeState {
    return buildModeState(this.#selection.mode);
  }

  /** The record of the current selection. */
  configEvent(): StoredEvent {
    return configEvent(this.#selection);
  }

  /**
   * Changes a config option.
   *
   * @param configId `model`, `mode` or `reasoning_effort`
   * @param value The new value
   * @returns The option list and the updates that tell the client
   * @throws {ConfigValueError} For an unknown option or value
   */
  set(configId: string, value: unknown): SelectionChange {
    const allowed = this.#allowedValues(configId);
    const refused = configId === "sandbox" && typeof value === "string"
      ? this.#sandbox?.refuse(value as SandboxLevel)
      : undefined;
    if (refused !== undefined) {
      throw new ConfigValueError(
        `value: sandbox ${refused}; expected one of ${allowed.join(", ")}`,
      );
    }
    if (typeof value !== "string" || !allowed.includes(value)) {
      throw new ConfigValueError(
        `value: ${JSON.stringify(value)} is not a value of "${configId}"; expected one of ${
          allowed.join(", ")
        }`,
      );
    }
    const previousMode = this.#selection.mode;
    this.#selection = this.#changed(configId, value);
    const options = this.configOptions();
    const updates: SessionUpdate[] = [
      { sessionUpdate: "config_option_update", configOptions: options },
    ];
    if (this.#selection.mode !== previousMode) {
      updates.push({ sessionUpdate: "current_mode_update", currentModeId: this.#selection.mode });
    }
    return { options, updates };
  }

  #allowedValues(configId: string): string[] {
    const options = this.configOptions();
    const option = options.find((candidate) => candidate.id === configId);
    if (!option) {
      throw new ConfigValueError(
        `configId: unknown config option "${configId}"; expected one of ${
          options.map((candidate) => candidate.id).join(", ")
        }`,
      );
    }
    return option.type === "select"
      ? option.options.flatMap((entry) => "group" in entry ? entry.options : [entry])
        .map((entry) => entry.value)
      : [];
  }

  #changed(configId: string, value: string): Selection {
    const selection = this.#selection;
    if (configId === "model") {
      const effort = initialEffort(this.#catalog.info(value));
      return {
        model: value,
        mode: selection.mode,
        ...(effort === undefined ? {} : { effort }),
        ...(selection.sandbox === undefined ? {} : { sandbox: selection.sandbox }),
      };
    }
    if (configId === "mode") return { ...selection, mode: value as PermissionMode };
    if (configId === "sandbox") return { ...selection, sandbox: value as SandboxLevel };
    const { effort: _previous, ...rest } = selection;
    return value === DEFAULT_EFFORT ? rest : { ...rest, effort: value };
  }
}

/**
 * The reasoning effort a turn asks for: the pinned one, else the model's default, when the model
 * accepts it and it is not the provider's default.
 *
 * @param pinned The selection the prompt pinned
 * @param model The model's facts
 * @returns The effort, or `undefined` for the provider's default
 */
export function turnEffort(pinned: Selection, model: ModelInfo): string | undefined {
  const chosen = pinned.effort ?? model.defaultReasoningEffort;
  return chosen !== undefined && effortValues(model).includes(chosen) && chosen !== DEFAULT_EFFORT
    ? chosen
    : undefined;
}

/**
 * The record of a selection (`config`): what a session restores its model, mode and effort from.
 *
 * @param selection The selection
 * @returns The event
 */
export function configEvent({ model, mode, effort, sandbox }: Selection): StoredEvent {
  return {
    type: "config",
    model,
    mode,
    ...(effort === undefined ? {} : { effort }),
    ...(sandbox === undefined ? {} : { sandbox }),
  };
}

/**
 * The level a session's commands run at: its chosen one when the server's sandbox allows it
 * (a recorded choice looser than a restarted server's level becomes that level), else the
 * server's. A chosen level that cannot be set up stays, and its commands fail rather than run
 * unconfined.
 *
 * @param selection The session's selection
 * @param sandbox The server's sandbox
 * @returns The level
 */
export function sandboxLevel(selection: Selection, sandbox: CommandSandbox): SandboxLevel {
  const chosen = selection.sandbox;
  if (chosen === undefined) return sandbox.level;
  return sandboxTightness(chosen) < sandboxTightness(sandbox.level) ? sandbox.level : chosen;
}
