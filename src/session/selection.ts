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
import {
  buildConfigOptions,
  buildModeState,
  DEFAULT_EFFORT,
  effortValues,
  initialEffort,
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

/** The model, mode and effort a session runs with, validated against the catalog. */
export class SessionSelection {
  readonly #catalog: Pick<ModelCatalog, "info" | "list">;
  #selection: Selection;

  /**
   * @param selection The initial selection
   * @param catalog The models offered
   */
  constructor(selection: Selection, catalog: Pick<ModelCatalog, "info" | "list">) {
    this.#selection = selection;
    this.#catalog = catalog;
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
    return buildConfigOptions(this.#selection, this.#catalog.list(), this.currentModel());
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
      return { model: value, mode: selection.mode, ...(effort === undefined ? {} : { effort }) };
    }
    if (configId === "mode") return { ...selection, mode: value as PermissionMode };
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
export function configEvent({ model, mode, effort }: Selection): StoredEvent {
  return { type: "config", model, mode, ...(effort === undefined ? {} : { effort }) };
}
