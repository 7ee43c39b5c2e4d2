/**
 * Built-in providers and the model facts acp-harness knows without a config file.
 *
 * @module
 */

/** The wire formats acp-harness speaks. */
export type ProviderApi = "openai-chat" | "anthropic-messages";

/** How to reach a provider. */
export interface ProviderSpec {
  /** Wire format the provider speaks. */
  readonly api: ProviderApi;
  /** Base URL; the API path (`/chat/completions`, `/v1/messages`) is appended. */
  readonly baseUrl: string;
  /** Environment variable holding the API key; none for keyless servers. */
  readonly apiKeyEnv?: string;
  /** Extra request headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Request body field for the output limit (OpenAI's newer models want `max_completion_tokens`). */
  readonly maxTokensField?: "max_tokens" | "max_completion_tokens";
  /** Whether the provider counts as configured (offered in the model list). */
  readonly configured: boolean;
  /** Facts assumed for models the catalog does not list. */
  readonly defaults: ModelFacts;
  /**
   * Ollama's `/api/tags` URL: the models installed on the server are listed from it (by the
   * catalog's `discover()`, and only when the provider is configured).
   */
  readonly tagsUrl?: string;
  /** For a keyless provider: the environment variable whose presence configures it. */
  readonly hostEnv?: string;
}

/** Pricing in USD per million tokens. */
export interface Pricing {
  /** Uncached input tokens. */
  readonly input: number;
  /** Output tokens. */
  readonly output: number;
  /** Input tokens read from the cache; the input price when absent. */
  readonly cacheRead?: number;
  /** Input tokens written to the cache; the input price when absent. */
  readonly cacheWrite?: number;
}

/** What is known about a model. */
export interface ModelFacts {
  /** Human name. */
  readonly name?: string;
  /** Context window in tokens. */
  readonly contextWindow?: number;
  /** Most output tokens per request. */
  readonly maxOutputTokens?: number;
  /** Whether it accepts image input. */
  readonly image?: boolean;
  /** Reasoning efforts it accepts, in order. */
  readonly reasoningEfforts?: readonly string[];
  /** The effort used when none is chosen. */
  readonly defaultReasoningEffort?: string;
  /** USD per million tokens. */
  readonly pricing?: Pricing;
}

/**
 * The built-in providers, read from the environment.
 *
 * @param env Looks up an environment variable
 * @returns Provider specs by id
 */
export function builtinProviders(
  env: (name: string) => string | undefined,
): Record<string, ProviderSpec> {
  const ollamaHost = ollamaBaseUrl(env("OLLAMA_HOST"));
  return {
    openai: {
      api: "openai-chat",
      baseUrl: env("OPENAI_BASE_URL") ?? "https://api.openai.com/v1",
      apiKeyEnv: "OPENAI_API_KEY",
      maxTokensField: "max_completion_tokens",
      configured: Boolean(env("OPENAI_API_KEY")),
      defaults: { contextWindow: 128_000, image: true },
    },
    anthropic: {
      api: "anthropic-messages",
      baseUrl: env("ANTHROPIC_BASE_URL") ?? "https://api.anthropic.com",
      apiKeyEnv: "ANTHROPIC_API_KEY",
      configured: Boolean(env("ANTHROPIC_API_KEY")),
      defaults: {
        contextWindow: 200_000,
        maxOutputTokens: 32_000,
        image: true,
        reasoningEfforts: ["low", "medium", "high"],
      },
    },
    deepseek: {
      api: "openai-chat",
      baseUrl: env("DEEPSEEK_BASE_URL") ?? "https://api.deepseek.com",
      apiKeyEnv: "DEEPSEEK_API_KEY",
      configured: Boolean(env("DEEPSEEK_API_KEY")),
      defaults: { contextWindow: 1_000_000, image: false },
    },
    ollama: {
      api: "openai-chat",
      baseUrl: `${ollamaHost}/v1`,
      configured: Boolean(env("OLLAMA_HOST")),
      defaults: { contextWindow: 4_096, image: false },
      tagsUrl: `${ollamaHost}/api/tags`,
      hostEnv: "OLLAMA_HOST",
    },
  };
}

/**
 * Ollama's server URL from `OLLAMA_HOST` the way Ollama reads it: without a scheme the port
 * defaults to 11434 (with an explicit scheme, to the scheme's port).
 */
function ollamaBaseUrl(value: string | undefined): string {
  const host = (value ?? "").trim().replace(/\/+$/, "");
  if (host === "") return "http://127.0.0.1:11434";
  if (/^https?:\/\//.test(host)) return host;
  const hasPort = /:\d+$/.test(host) && !/^\[[^\]]*\]$/.test(host);
  return `http://${host}${hasPort ? "" : ":11434"}`;
}

/** Models listed for the built-in providers, with the facts their providers publish. */
export const BUILTIN_MODELS: Readonly<Record<string, ModelFacts>> = {
  "openai/gpt-5.2": {
    name: "GPT-5.2",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    image: true,
    reasoningEfforts: ["low", "medium", "high"],
  },
  "openai/gpt-5": {
    name: "GPT-5",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    image: true,
    reasoningEfforts: ["minimal", "low", "medium", "high"],
    defaultReasoningEffort: "medium",
    pricing: { input: 1.25, output: 10, cacheRead: 0.125 },
  },
  "openai/gpt-5-mini": {
    name: "GPT-5 mini",
    contextWindow: 400_000,
    maxOutputTokens: 128_000,
    image: true,
    reasoningEfforts: ["minimal", "low", "medium", "high"],
    defaultReasoningEffort: "medium",
    pricing: { input: 0.25, output: 2, cacheRead: 0.025 },
  },
  "deepseek/deepseek-v4-pro": {
    name: "DeepSeek V4 Pro",
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    image: false,
    reasoningEfforts: ["low", "high", "max"],
    defaultReasoningEffort: "high",
  },
  "deepseek/deepseek-flash": {
    name: "DeepSeek Flash",
    contextWindow: 1_000_000,
    maxOutputTokens: 384_000,
    image: true,
    reasoningEfforts: ["low", "high", "max"],
    defaultReasoningEffort: "high",
  },
  "anthropic/claude-sonnet-5-5": { name: "Claude Sonnet 5.5" },
  "anthropic/claude-opus-5-5": { name: "Claude Opus 5.5" },
  "anthropic/claude-haiku-5-5": { name: "Claude Haiku 5.5" },
};
