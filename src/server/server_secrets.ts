/**
 * The names of the server's secrets in its environment, which the commands it runs for a model do
 * not inherit and a delegated agent's failure message never quotes.
 *
 * @module
 */
import { SERVER_SECRET_ENV } from "../host/child_env.ts";
import type { ModelCatalog } from "../llm/catalog.ts";
import { builtinProviders } from "../llm/presets.ts";

/**
 * The environment variables that hold the server's secrets: its HTTP token and token file
 * (`ACP_HARNESS_TOKEN`, `ACP_HARNESS_TOKEN_FILE`), every built-in provider's API key variable
 * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `DEEPSEEK_API_KEY`), and the `apiKeyEnv` of each
 * provider the catalog knows (those from the config file included). Sorted, without repeats.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { ModelCatalog } from "../llm/catalog.ts";
 * import { serverSecretEnv } from "./server_secrets.ts";
 * const names = serverSecretEnv(new ModelCatalog());
 * assert.ok(names.includes("OPENAI_API_KEY"));
 * assert.ok(names.includes("ACP_HARNESS_TOKEN"));
 * ```
 *
 * @param catalog The models offered (its providers' key variables count)
 * @returns The variables' names
 */
export function serverSecretEnv(
  catalog: Pick<ModelCatalog, "apiKeyVariables">,
): readonly string[] {
  const names = new Set(SERVER_SECRET_ENV);
  for (const spec of Object.values(builtinProviders(() => undefined))) {
    if (spec.apiKeyEnv) names.add(spec.apiKeyEnv);
  }
  for (const variable of catalog.apiKeyVariables()) names.add(variable.env);
  return [...names].sort();
}

/**
 * The values of the secrets {@link serverSecretEnv} names that are set (and long enough to be
 * worth hiding: at least 4 characters), for redacting text a child wrote.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { secretValues } from "./server_secrets.ts";
 * const env: Record<string, string> = { OPENAI_API_KEY: "sk-live-123", EMPTY: "" };
 * assert.deepEqual(secretValues(["OPENAI_API_KEY", "EMPTY"], (name) => env[name]), [
 *   "sk-live-123",
 * ]);
 * ```
 *
 * @param names The secrets' variable names
 * @param env Looks up a variable of the server's environment
 * @returns Their values
 */
export function secretValues(
  names: readonly string[],
  env: (name: string) => string | undefined,
): readonly string[] {
  return names.flatMap((name) => {
    const value = env(name)?.trim();
    return value !== undefined && value.length >= 4 ? [value] : [];
  });
}
