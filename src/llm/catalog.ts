import type { Logger } from "../log/logger.ts";
import type * as AnthropicMessages from "./anthropic_messages.ts";
import type * as OpenAiChat from "./openai_chat.ts";
import { EchoProvider } from "./echo.ts";
import { LoggedProvider } from "./logged_provider.ts";
import { BUILTIN_MODELS, type ModelFacts, type Pricing, type ProviderSpec } from "./presets.ts";
import {
  type LlmEvent,
  type LlmProvider,
  type LlmRequest,
  type LlmStreamOptions,
  ProviderError,
} from "./provider.ts";
import { type Script, ScriptedProvider } from "./scripted.ts";
import { describeNetworkError } from "../util/network_error.ts";
import { lazyImport } from "../util/lazy_import.ts";

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

/** A model known to the catalog, and whether it can be used now. */
export interface ModelListing extends ModelInfo {
  /** Whether a request to it can be sent now: its provider is configured and has its key. */
  readonly available: boolean;
  /** Why it is not available (`OPENAI_API_KEY is not set`), when it is not. */
  readonly reason?: string;
  /** Whether the `model` config option offers it. */
  readonly offered: boolean;
}

/** An environment variable holding a provider's API key. */
export interface ApiKeyVariable {
  /** The provider id. */
  readonly provider: string;
  /** The variable's name (`OPENAI_API_KEY`). */
  readonly env: string;
  /** Whether it is set (non-empty). */
  readonly set: boolean;
}

/** Options for {@link ModelCatalog.discover}. */
export interface DiscoverOptions {
  /** Stops the queries. */
  readonly signal?: AbortSignal;
  /**
   * Longest wait for one provider's answer.
   *
   * @default {3000}
   */
  readonly timeoutMs?: number;
}

/** What one provider's model list query found. */
export interface DiscoveryResult {
  /** The provider asked. */
  readonly provider: string;
  /** The model ids it listed (`ollama/qwen3-coder`), when it answered. */
  readonly models?: readonly string[];
  /** Why the query failed, when it did. */
  readonly error?: string;
  /** How long the query took. */
  readonly ms: number;
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
  /** Receives one line per model list query, and per model request with `logRequests`. */
  readonly logger?: Logger;
  /**
   * Wraps every provider in a {@link LoggedProvider} (debug lines per request and response). It
   * costs a little per streamed event, so the CLI sets it only at `--log-level debug`.
   * @default {true} when a logger is given
   */
  readonly logRequests?: boolean;
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
 * with the provider's default facts. Providers are loaded on first use. {@link discover} adds
 * the models a configured provider lists itself (Ollama's installed models).
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
    this.#providers.set("echo", this.#logged(new EchoProvider()));
    if (options.script) {
      this.#providers.set("scripted", this.#logged(new ScriptedProvider(options.script)));
    }
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
   * Every model the catalog knows, offered or not, with whether it can be used now: the offered
   * ones first (in display order), then `scripted` without a script and the listed models of
   * providers that are not configured.
   *
   * @returns The models
   */
  known(): readonly ModelListing[] {
    const ids = this.#offered.map((model) => model.id);
    if (!this.#options.script) ids.push("scripted");
    for (const providerId of Object.keys(this.#options.providers ?? {})) {
      for (const id of Object.keys(this.#models)) {
        if (id.startsWith(`${providerId}/`) && !ids.includes(id)) ids.push(id);
      }
    }
    const listings: ModelListing[] = [];
    for (const id of ids) {
      const info = id === "scripted" && !this.#options.script
        ? this.#describe(
          "scripted",
          "scripted",
          "scripted",
          OFFLINE.scripted!.name,
          OFFLINE.scripted!.description,
          { image: false },
        )
        : this.info(id);
      if (!info) continue;
      const reason = this.#unavailable(info.provider);
      listings.push({
        ...info,
        available: reason === undefined,
        ...(reason === undefined ? {} : { reason }),
        offered: this.has(id),
      });
    }
    return listings;
  }

  /**
   * Asks every configured provider that can list its own models (Ollama, at `OLLAMA_HOST`'s
   * `/api/tags`) which ones it has, and offers them from then on. Nothing else is contacted;
   * a provider that does not answer within the timeout is reported and skipped. Never throws.
   *
   * @param options A signal and the timeout per provider
   * @returns What each provider answered
   */
  async discover(options: DiscoverOptions = {}): Promise<readonly DiscoveryResult[]> {
    const asked = Object.entries(this.#options.providers ?? {}).filter(([, spec]) =>
      spec.configured && spec.tagsUrl !== undefined
    );
    return await Promise.all(asked.map(async ([providerId, spec]) => {
      const result = await listTags(
        spec.tagsUrl as string,
        this.#options.fetch ?? fetch,
        options,
      );
      const ms = result.ms;
      if (result.names === undefined) {
        this.#options.logger?.warn("cannot list models", {
          provider: providerId,
          url: spec.tagsUrl,
          ms,
          error: result.error,
        });
        return { provider: providerId, error: result.error ?? "no answer", ms };
      }
      const models = result.names.map((name) => `${providerId}/${name}`);
      for (const id of models) {
        if (this.has(id)) continue;
        const info = this.info(id);
        if (info) this.#offered.push(info);
      }
      this.#options.logger?.info("models listed", {
        provider: providerId,
        count: models.length,
        ms,
      });
      return { provider: providerId, models, ms };
    }));
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
    if (!info) throw new RangeError(this.#unknownModel(id));
    let provider = this.#providers.get(info.provider);
    if (!provider) {
      provider = this.#logged(this.#createProvider(info.provider));
      this.#providers.set(info.provider, provider);
    }
    return { info, provider };
  }

  /** The message for an id that names no model: every valid choice. */
  #unknownModel(id: string): string {
    const providers = Object.keys(this.#options.providers ?? {});
    const scripted = this.#options.script ? "scripted" : "scripted (with --script)";
    const listed = this.#offered.map((model) => model.id).filter((model) =>
      model !== "echo" && model !== "scripted"
    );
    const forms = providers.length === 0
      ? ""
      : `, or <provider>/<model> with provider one of ${providers.join(", ")}`;
    return `Unknown model "${id}": expected one of echo, ${scripted}${
      listed.length > 0 ? `, ${listed.join(", ")}` : ""
    }${forms} (run "acp-harness models" to list them)`;
  }

  /**
   * The environment variables that hold the providers' API keys, one per provider that needs
   * one, and whether each is set: what a client can be told to set (ACP `authMethods`).
   *
   * @returns The variables, in provider order
   */
  apiKeyVariables(): ReadonlyArray<ApiKeyVariable> {
    const env = this.#options.env ?? (() => undefined);
    return Object.entries(this.#options.providers ?? {}).flatMap(([provider, spec]) =>
      spec.apiKeyEnv ? [{ provider, env: spec.apiKeyEnv, set: Boolean(env(spec.apiKeyEnv)) }] : []
    );
  }

  /**
   * The API-key variable a model needs and does not have, when that is why it cannot be used.
   *
   * @param id A model id
   * @returns The missing variable, or `undefined`
   */
  missingApiKey(id: string): ApiKeyVariable | undefined {
    const provider = this.info(id)?.provider;
    return this.apiKeyVariables().find((variable) =>
      variable.provider === provider && !variable.set
    );
  }

  /** Why a provider's models cannot be used now, or `undefined` when they can. */
  #unavailable(providerId: string): string | undefined {
    if (providerId === "echo") return undefined;
    if (providerId === "scripted") return this.#options.script ? undefined : "needs --script";
    const spec = this.#options.providers?.[providerId];
    if (!spec) return "unknown provider";
    if (spec.apiKeyEnv) {
      const env = this.#options.env ?? (() => undefined);
      return env(spec.apiKeyEnv) ? undefined : `${spec.apiKeyEnv} is not set`;
    }
    if (spec.configured) return undefined;
    return spec.hostEnv ? `${spec.hostEnv} is not set` : "not configured";
  }

  #logged(provider: LlmProvider): LlmProvider {
    const { logger, logRequests = true } = this.#options;
    return logger && logRequests ? new LoggedProvider(provider, logger) : provider;
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
        const { AnthropicMessagesProvider } = await lazyImport<typeof AnthropicMessages>(
          import("./anthropic_messages" + ".ts"),
        );
        return new AnthropicMessagesProvider(common);
      }
      const { OpenAiChatProvider } = await lazyImport<typeof OpenAiChat>(
        import("./openai_chat" + ".ts"),
      );
      return new OpenAiChatProvider({
        ...common,
        ...(spec.maxTokensField ? { maxTokensField: spec.maxTokensField } : {}),
      });
    });
  }
}

/** What one `/api/tags` query got: the model names, or why not. */
interface TagsResult {
  readonly names?: readonly string[];
  readonly error?: string;
  readonly ms: number;
}

/**
 * Lists the models of an Ollama server from its `/api/tags` answer
 * (`{"models": [{"name": "qwen3-coder:latest", …}]}`); a `:latest` tag is dropped, as Ollama
 * adds it to a name without one.
 */
async function listTags(
  url: string,
  fetchImpl: typeof fetch,
  options: DiscoverOptions,
): Promise<TagsResult> {
  const started = performance.now();
  const ms = (): number => Math.round(performance.now() - started);
  const controller = new AbortController();
  const timeoutMs = options.timeoutMs ?? 3000;
  const timer = setTimeout(
    () => controller.abort(new Error(`no answer within ${timeoutMs} ms`)),
    timeoutMs,
  );
  const onAbort = (): void => controller.abort(options.signal?.reason);
  options.signal?.addEventListener("abort", onAbort, { once: true });
  if (options.signal?.aborted) onAbort();
  try {
    const response = await fetchImpl(url, { signal: controller.signal });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      return { error: `HTTP ${response.status}`, ms: ms() };
    }
    const body = await response.json() as { models?: unknown };
    if (!Array.isArray(body?.models)) return { error: "unexpected answer", ms: ms() };
    const names: string[] = [];
    for (const entry of body.models as unknown[]) {
      const raw = (entry as { name?: unknown; model?: unknown } | null)?.name ??
        (entry as { model?: unknown } | null)?.model;
      if (typeof raw !== "string" || raw === "") continue;
      const name = raw.endsWith(":latest") ? raw.slice(0, -":latest".length) : raw;
      if (!names.includes(name)) names.push(name);
    }
    return { names, ms: ms() };
  } catch (error) {
    if (controller.signal.aborted) {
      const reason: unknown = controller.signal.reason;
      return { error: reason instanceof Error ? reason.message : String(reason), ms: ms() };
    }
    return { error: describeNetworkError(error), ms: ms() };
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
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
