/**
 * The models of acp-harness: the {@link ModelCatalog} that resolves `provider/model` ids, the
 * built-in provider presets (OpenAI, Anthropic, DeepSeek, Ollama, any OpenAI-compatible URL), the
 * offline {@link EchoProvider} and {@link ScriptedProvider}, and the {@link LlmProvider} contract a
 * provider of your own implements. Hand a catalog to `createAgentServer` (`catalog`) to choose the
 * models a server offers.
 *
 * @example Replaying a scripted model turn
 * ```ts
 * import assert from "node:assert/strict";
 * import { type LlmEvent, parseScript, ScriptedProvider } from "./llm.ts";
 *
 * const provider = new ScriptedProvider(parseScript([{ text: "hello" }]));
 * const events: LlmEvent[] = [];
 * for await (
 *   const event of provider.stream({
 *     sessionId: "s",
 *     model: "scripted",
 *     system: "",
 *     tools: [],
 *     messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }],
 *   }, { signal: new AbortController().signal })
 * ) events.push(event);
 * assert.equal(events.at(-1)?.type, "finish");
 * ```
 *
 * @module
 */
export {
  type ApiKeyVariable,
  type DiscoverOptions,
  type DiscoveryResult,
  ModelCatalog,
  type ModelCatalogOptions,
  type ModelInfo,
  type ModelListing,
  type ResolvedModel,
} from "./src/llm/catalog.ts";
export {
  builtinProviders,
  type ModelFacts,
  type Pricing,
  type ProviderApi,
  type ProviderSpec,
} from "./src/llm/presets.ts";
export { EchoProvider } from "./src/llm/echo.ts";
export { parseScript, type Script, ScriptedProvider, type ScriptStep } from "./src/llm/scripted.ts";
export {
  type FinishReason,
  type LlmContentPart,
  type LlmEvent,
  type LlmMessage,
  type LlmProvider,
  type LlmRequest,
  type LlmResourceLink,
  type LlmStreamOptions,
  type LlmToolCall,
  type LlmToolResultPart,
  type LlmToolSpec,
  type LlmUsage,
  ProviderError,
  type ProviderErrorKind,
  type ProviderErrorOptions,
} from "./src/llm/provider.ts";
export { DEFAULT_RETRY, type RetryPolicy } from "./src/agent/run_turn.ts";
