import { EchoProvider } from "./echo.ts";
import { BUILTIN_MODELS, type ModelFacts, type Pricing, type ProviderSpec } from "./presets.ts";
import {
  type LlmEvent,
  type LlmProvider,
  type LlmRequest,
  type LlmStreamOptions,
  ProviderError,
} from "./provider.ts";
import { type Script, ScriptedProvider } from "./scripted.ts";

/** What the server knows about one model. */
export interface ModelInfo {
  /** Full id, as used in `--model` and the `model` config option (`provider/model`). */
  readonly id: string;
  /** Provider id (the group it is listed under). */
  readonly provider: string;
  /** Model name within the provider, as sent to its API. */
  readonly model: string;
  /** Human name. */
  readonly name: string;
  /** One-line description. */
  readonly description: string;
  /** Context window in tokens, when known. */
  readonly contextWindow?: number;
  /** Most output tokens per request, when known. */
  readonly maxOutputTokens?: number;
  /** Whether the model accepts image input. */
  readonly image: boolean;
  /** Reasoning efforts it accepts (empty when it has no such setting). */
  readonly reasoningEfforts: readonly string[];
  /** The effort used when none is chosen; undefined means the provider's own default. */
  readonly defaultReasoningEffort?: string;
  /** USD per million tokens, when known. */
  readonly pricing?: Pricing;
}

/** A model resolved for a request. */
export interface ResolvedModel {
  /** What is known about the model. */
  readonly info: ModelInfo;
  /** The provider that serves it. */
  readonly provider: LlmProvider;
}

/** Options for {@link ModelCatalog}. */
export interface ModelCatalogOptions {
  /** Makes the offline `scripted` model available. */
  readonly script?: Script;
  /** Providers by id (built-in and from the config file). */
  readonly providers?: Readonly<Record<string, ProviderSpec>>;
  /** Model facts by full id, over the built-in ones. */
  readonly models?: Readonly<Record<string, ModelFacts>>;
  /** The server's default model, always offered. */
  readonly defaultModel?: string;
  /** Looks up API keys. */
  readonly env?: (name: string) => string | undefined;
  /** The fetch providers use (tests inject one). */
  readonly fetch?: typeof fetch;
}

const OFFLINE: Readonly<Record<string, { name: string; description: string }>> = {
  echo: {
    name: "Echo (offline)",
    description: "Deterministic offline model that echoes the prompt",
  },
  scripted: {
    name: "Scripted (offline)",
    description: "Replays the configured script of model steps",
  },
};

/**
 * The models a server offers and the providers behind them.
 *
 * Offered: `echo`, `scripted` (with a script), and for every provider that is configured (its
 * key or host is set, or it comes from the config file) the models listed for it; the default
 * model is always offered. Any `provider/model` id of a known provider resolves, listed or not,
 * with the provider's default facts. Providers are loaded on first use.
 *
 * @example Resolving the offline default
 * ```ts
 * import assert from "node:assert/strict";
 * import { ModelCatalog } from "./catalog.ts";
 * const catalog = new ModelCatalog();
 * assert.equal(catalog.resolve("echo").provider.id, "echo");
 * ```
 */
export class ModelCatalog {
  readonly #options: ModelCatalogOptions;
  readonly #models: Readonly<Record<string, ModelFacts>>;
  readonly #providers = new Map<string, LlmProvider>();
  readonly #offered: ModelInfo[] = [];

  /**
   * Creates a catalog.
   *
   * @param options Providers, model facts and the script
   */
  constructor(options: ModelCatalogOptions = {}) {
    this.#options = options;
    // Config facts refine the built-in ones field by field.
    const models: Record<string, ModelFacts> = { ...BUILTIN_MODELS };
    for (const [id, facts] of Object.entries(options.models ?? {})) {
      models[id] = { ...models[id], ...facts };
    }
    this.#models = models;
    this.#providers.set("echo", new EchoProvider());
    if (options.script) this.#providers.set("scripted", new ScriptedProvider(options.script));
    const ids = ["echo", ...(options.script ? ["scripted"] : [])];
    for (const [providerId, spec] of Object.entries(options.providers ?? {})) {
      if (!spec.configured) continue;
      for (const id of Object.keys(this.#models)) {
        if (id.startsWith(`${providerId}/`)) ids.push(id);
      }
    }
    if (options.defaultModel && !ids.includes(options.defaultModel)) ids.push(options.defaultModel);
    for (const id of ids) {
      const info = this.info(id);
      if (info) this.#offered.push(info);
    }
  }

  /** Every model offered, in display order. */
  list(): readonly ModelInfo[] {
    return this.#offered;
  }

  /** Whether `id` names an offered model. */
  has(id: string): boolean {
    return this.#offered.some((model) => model.id === id);
  }

  /**
   * What is known about a model id, or `undefined` when its provider is unknown.
   *
   * @param id `echo`, `scripted` or `provider/model`
   * @returns The model's facts
   */
  info(id: string): ModelInfo | undefined {
    const offline = OFFLINE[id];
    if (offline) {
      if (id === "scripted" && !this.#options.script) return undefined;
      return this.#describe(id, id, id, offline.name, offline.description, {
        image: false,
        ...this.#models[id],
      });
    }
    const slash = id.indexOf("/");
    if (slash <= 0 || slash === id.length - 1) return undefined;
    const providerId = id.slice(0, slash);
    const spec = this.#options.providers?.[providerId];
    if (!spec) return undefined;
    const facts = { ...spec.defaults, ...this.#models[id] };
    const model = id.slice(slash + 1);
    return this.#describe(
      id,
      providerId,
      model,
      facts.name ?? model,
      `${model} via ${providerId}`,
      facts,
    );
  }

  /**
   * Finds the model and its provider.
   *
   * @param id A model id
   * @returns The model and provider
   * @throws {RangeError} For an id whose provider is unknown
   */
  resolve(id: string): ResolvedModel {
    const info = this.info(id);
    if (!info) {
      throw new RangeError(
        `Unknown model "${id}": expected echo${
          this.#options.script ? ", scripted" : ""
        } or provider/model with provider one of ${
          Object.keys(this.#options.providers ?? {}).join(", ") || "(none)"
        }`,
      );
    }
    let provider = this.#providers.get(info.provider);
    if (!provider) {
      provider = this.#createProvider(info.provider);
      this.#providers.set(info.provider, provider);
    }
    return { info, provider };
  }

  #describe(
    id: string,
    provider: string,
    model: string,
    name: string,
    description: string,
    facts: ModelFacts,
  ): ModelInfo {
    return {
      id,
      provider,
      model,
      name,
      description,
      image: facts.image ?? false,
      reasoningEfforts: facts.reasoningEfforts ?? [],
      ...(facts.contextWindow === undefined ? {} : { contextWindow: facts.contextWindow }),
      ...(facts.maxOutputTokens === undefined ? {} : { maxOutputTokens: facts.maxOutputTokens }),
      ...(facts.defaultReasoningEffort === undefined
        ? {}
        : { defaultReasoningEffort: facts.defaultReasoningEffort }),
      ...(facts.pricing === undefined ? {} : { pricing: facts.pricing }),
    };
  }

  #createProvider(providerId: string): LlmProvider {
    const spec = this.#options.providers?.[providerId] as ProviderSpec;
    const env = this.#options.env ?? (() => undefined);
    const fetchImpl = this.#options.fetch;
    return new LazyProvider(providerId, async () => {
      const apiKey = spec.apiKeyEnv ? env(spec.apiKeyEnv) : undefined;
      if (spec.apiKeyEnv && !apiKey) {
        throw new ProviderError(`${spec.apiKeyEnv} is not set`, { kind: "auth", retryable: false });
      }
      const common = {
        id: providerId,
        baseUrl: spec.baseUrl,
        ...(apiKey ? { apiKey } : {}),
        ...(spec.headers ? { headers: { ...spec.headers } } : {}),
        ...(fetchImpl ? { fetch: fetchImpl } : {}),
      };
      if (spec.api === "anthropic-messages") {
        const { AnthropicMessagesProvider } = await import("./anthropic_messages.ts");
        return new AnthropicMessagesProvider(common);
      }
      const { OpenAiChatProvider } = await import("./openai_chat.ts");
      return new OpenAiChatProvider({
        ...common,
        ...(spec.maxTokensField ? { maxTokensField: spec.maxTokensField } : {}),
      });
    });
  }
}

/**
 * Loads a provider's module on the first request; a load failure fails that request (and the
 * next request tries again). Once loaded, requests go straight to the provider's stream.
 */
class LazyProvider implements LlmProvider {
  readonly id: string;
  readonly #load: () => Promise<LlmProvider>;
  #provider: Promise<LlmProvider> | undefined;
  #loaded: LlmProvider | undefined;

  constructor(id: string, load: () => Promise<LlmProvider>) {
    this.id = id;
    this.#load = load;
  }

  stream(request: LlmRequest, options: LlmStreamOptions): AsyncIterable<LlmEvent> {
    const loaded = this.#loaded;
    if (loaded !== undefined) return loaded.stream(request, options);
    return this.#loadAndStream(request, options);
  }

  async *#loadAndStream(
    request: LlmRequest,
    options: LlmStreamOptions,
  ): AsyncGenerator<LlmEvent, void, undefined> {
    let provider: LlmProvider;
    try {
      this.#provider ??= this.#load();
      provider = await this.#provider;
    } catch (error) {
      this.#provider = undefined;
      const failure = error instanceof ProviderError
        ? error
        : new ProviderError(`Cannot load provider: ${String(error)}`, {
          kind: "bad-request",
          retryable: false,
          cause: error,
        });
      return yield { type: "finish", reason: "error", error: failure };
    }
    this.#loaded = provider;
    yield* provider.stream(request, options);
  }
}
