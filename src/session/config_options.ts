import { PERMISSION_MODES, type PermissionMode } from "../permission/mode.ts";
import type { ModelInfo } from "../llm/catalog.ts";
import type { SandboxLevel } from "../sandbox/sandbox.ts";
import type {
  SessionConfigOption,
  SessionConfigSelectGroup,
  SessionModeState,
} from "../transport/acp_types.ts";

/** What a session runs with; a prompt pins a copy at admission. */
export interface Selection {
  readonly model: string;
  readonly mode: PermissionMode;
  /** Reasoning effort; `undefined` is the provider's own default. */
  readonly effort?: string;
  /** The sandbox of the session's commands; `undefined` is the server's level. */
  readonly sandbox?: SandboxLevel;
}

/** The value of the `reasoning_effort` option that leaves the effort to the provider. */
export const DEFAULT_EFFORT = "default";

/**
 * The effort a model starts with: its declared default, else the provider's.
 *
 * @param model The model
 * @returns The effort, or `undefined` for the provider's default
 */
export function initialEffort(model: ModelInfo | undefined): string | undefined {
  return model?.reasoningEfforts.length ? model.defaultReasoningEffort : undefined;
}

/**
 * The values of the `reasoning_effort` option for a model (empty when it has no efforts).
 *
 * @param model The model
 * @returns The values, `default` first when the model declares no default effort
 */
export function effortValues(model: ModelInfo | undefined): string[] {
  if (!model?.reasoningEfforts.length) return [];
  return model.defaultReasoningEffort === undefined
    ? [DEFAULT_EFFORT, ...model.reasoningEfforts]
    : [...model.reasoningEfforts];
}

const MODE_INFO: Readonly<Record<PermissionMode, { name: string; description: string }>> = {
  "ask": {
    name: "Ask",
    description: "Reading and searching run; edits and commands ask for permission",
  },
  "auto": { name: "Auto", description: "Everything runs without asking" },
  "read-only": { name: "Read only", description: "Edits and commands are refused" },
};

const SANDBOX_INFO: Readonly<Record<SandboxLevel, { name: string; description: string }>> = {
  "off": { name: "Off", description: "Commands run unconfined" },
  "workspace-write": {
    name: "Workspace write",
    description: "Commands write only in the workspace and a private /tmp; no network",
  },
  "read-only": {
    name: "Read only",
    description: "Commands write only in a private /tmp; no network",
  },
};

/** The sandbox levels a session may choose and the one it runs at. */
export interface SandboxChoice {
  /** The level the session's commands run at. */
  readonly current: SandboxLevel;
  /** The levels it may choose: the server's and tighter ones that can be set up. */
  readonly levels: readonly SandboxLevel[];
}

/**
 * The complete config option list for a selection.
 *
 * @param selection Current values
 * @param models The models offered
 * @param current The selected model's facts
 * @param sandbox The sandbox levels offered, when the server has a sandbox
 * @returns `model` (grouped by provider), `mode`, `sandbox` when offered, and `reasoning_effort`
 *   for models with efforts
 */
export function buildConfigOptions(
  selection: Selection,
  models: readonly ModelInfo[],
  current: ModelInfo | undefined,
  sandbox?: SandboxChoice,
): SessionConfigOption[] {
  const groups: SessionConfigSelectGroup[] = [];
  for (const model of models) {
    let group = groups.find((candidate) => candidate.group === model.provider);
    if (!group) {
      group = { group: model.provider, name: model.provider, options: [] };
      groups.push(group);
    }
    group.options.push({ value: model.id, name: model.name, description: model.description });
  }
  const options: SessionConfigOption[] = [
    {
      id: "model",
      name: "Model",
      description: "The model that answers prompts",
      category: "model",
      type: "select",
      currentValue: selection.model,
      options: groups,
    },
    {
      id: "mode",
      name: "Permission mode",
      description: "What runs without asking",
      category: "mode",
      type: "select",
      currentValue: selection.mode,
      options: PERMISSION_MODES.map((mode) => ({ value: mode, ...MODE_INFO[mode] })),
    },
  ];
  if (sandbox) {
    options.push({
      id: "sandbox",
      name: "Command sandbox",
      description: "What commands may write and reach (only tighter than the server's)",
      type: "select",
      currentValue: sandbox.current,
      options: sandbox.levels.map((level) => ({ value: level, ...SANDBOX_INFO[level] })),
    });
  }
  const efforts = effortValues(current);
  if (efforts.length > 0) {
    options.push({
      id: "reasoning_effort",
      name: "Reasoning effort",
      description: "How much the model thinks before answering",
      category: "thought_level",
      type: "select",
      currentValue: selection.effort ?? current?.defaultReasoningEffort ?? DEFAULT_EFFORT,
      options: efforts.map((value) => ({
        value,
        name: value === DEFAULT_EFFORT ? "Provider default" : value,
      })),
    });
  }
  return options;
}

/**
 * The legacy mode state, kept in sync with the `mode` option.
 *
 * @param mode Current mode
 * @returns The mode state
 */
export function buildModeState(mode: PermissionMode): SessionModeState {
  return {
    currentModeId: mode,
    availableModes: PERMISSION_MODES.map((id) => ({ id, ...MODE_INFO[id] })),
  };
}
