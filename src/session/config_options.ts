import { PERMISSION_MODES, type PermissionMode } from "../config/config.ts";
import type { ModelInfo } from "../llm/catalog.ts";
import type {
  SessionConfigOption,
  SessionConfigSelectGroup,
  SessionModeState,
} from "../protocol/acp_types.ts";

/** What a session runs with; a prompt pins a copy at admission. */
export interface Selection {
  readonly model: string;
  readonly mode: PermissionMode;
}

const MODE_INFO: Readonly<Record<PermissionMode, { name: string; description: string }>> = {
  "ask": {
    name: "Ask",
    description: "Reading and searching run; edits and commands ask for permission",
  },
  "auto": { name: "Auto", description: "Everything runs without asking" },
  "read-only": { name: "Read only", description: "Edits and commands are refused" },
};

/**
 * The complete config option list for a selection.
 *
 * @param selection Current values
 * @param models The models offered
 * @returns `model` (grouped by provider) and `mode`
 */
export function buildConfigOptions(
  selection: Selection,
  models: readonly ModelInfo[],
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
  return [
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
