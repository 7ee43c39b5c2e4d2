import { EchoProvider } from "./echo.ts";
import type { LlmProvider } from "./provider.ts";
import { type Script, ScriptedProvider } from "./scripted.ts";

/** What the server knows about one model. */
export interface ModelInfo {
  /** Full id, as used in `--model` and the `model` config option. */
  readonly id: string;
  /** Provider id (the group it is listed under). */
  readonly provider: string;
  /** Model name within the provider. */
  readonly model: string;
  /** Human name. */
  readonly name: string;
  readonly description: string;
  /** Context window in tokens, when known. */
  readonly contextWindow?: number;
  /** Whether the model accepts image input. */
  readonly image: boolean;
}

/** A model resolved for a request. */
export interface ResolvedModel {
  readonly info: ModelInfo;
  readonly provider: LlmProvider;
}

/** Options for {@link ModelCatalog}. */
export interface ModelCatalogOptions {
  /** Makes the offline `scripted` model available. */
  readonly script?: Script;
}

/**
 * The models a server offers and the providers behind them.
 *
 * @example Resolving the offline default
 * ```ts
 * import assert from "node:assert/strict";
 * import { ModelCatalog } from "./catalog.ts";
 * const catalog = new ModelCatalog();
 * assert(catalog.resolve("echo").provider.id === "echo");
 * ```
 */
export class ModelCatalog {
  readonly #models: ModelInfo[] = [];
  readonly #providers = new Map<string, LlmProvider>();

  /** @param options Which optional models exist */
  constructor(options: ModelCatalogOptions = {}) {
    this.#models.push({
      id: "echo",
      provider: "echo",
      model: "echo",
      name: "Echo (offline)",
      description: "Deterministic offline model that echoes the prompt",
      image: false,
    });
    this.#providers.set("echo", new EchoProvider());
    if (options.script) {
      this.#models.push({
        id: "scripted",
        provider: "scripted",
        model: "scripted",
        name: "Scripted (offline)",
        description: "Replays the configured script of model steps",
        image: false,
      });
      this.#providers.set("scripted", new ScriptedProvider(options.script));
    }
  }

  /** Every model offered, in display order. */
  list(): readonly ModelInfo[] {
    return this.#models;
  }

  /** Whether `id` names an offered model. */
  has(id: string): boolean {
    return this.#models.some((model) => model.id === id);
  }

  /**
   * Finds the model and its provider.
   *
   * @param id A model id
   * @returns The model and provider
   * @throws {RangeError} For an unknown id
   */
  resolve(id: string): ResolvedModel {
    const info = this.#models.find((model) => model.id === id);
    const provider = info && this.#providers.get(info.provider);
    if (!info || !provider) {
      throw new RangeError(
        `Unknown model "${id}": expected one of ${this.#models.map((m) => m.id).join(", ")}`,
      );
    }
    return { info, provider };
  }
}
