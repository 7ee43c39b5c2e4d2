/**
 * ACP authentication for a server whose credentials are its providers' API keys, read from its
 * environment: one `agent` auth method per key variable, so that a client (Zed) shows what to set
 * instead of a failed prompt. The agent cannot set a variable of its own process; `authenticate`
 * says whether it is set.
 *
 * @module
 */
import { type AuthMethod, RequestError } from "@agentclientprotocol/sdk";
// Only types of the catalog: this module is on the start-up path (initialize), which loads no
// more than it must.
import type { ApiKeyVariable, ModelCatalog } from "../llm/catalog.ts";

/** The id of the auth method of one variable. */
function methodId(variable: ApiKeyVariable): string {
  return `env:${variable.env}`;
}

/**
 * The auth methods to advertise: one per provider API-key variable the catalog knows.
 *
 * @example The methods of a catalog with OpenAI
 * ```ts
 * import assert from "node:assert/strict";
 * import { ModelCatalog } from "../llm/catalog.ts";
 * import { builtinProviders } from "../llm/presets.ts";
 * import { authMethods } from "./auth_methods.ts";
 * const env = (name: string) => name === "OPENAI_API_KEY" ? "sk-1" : undefined;
 * const methods = authMethods(new ModelCatalog({ providers: builtinProviders(env), env }));
 * assert.equal(methods[0]?.id, "env:OPENAI_API_KEY");
 * ```
 *
 * @param catalog The models and providers
 * @returns The methods, in provider order
 */
export function authMethods(catalog: Pick<ModelCatalog, "apiKeyVariables">): AuthMethod[] {
  return catalog.apiKeyVariables().map((variable) => ({
    id: methodId(variable),
    name: `${variable.env} (${variable.provider})`,
    description: `The ${variable.provider} API key, read from the ${variable.env} environment ` +
      `variable of the agent: set it where the client starts acp-harness (Zed: the agent's "env") ` +
      "and restart it.",
  }));
}

/**
 * `authenticate`: succeeds when the method's variable is set; otherwise fails with -32000
 * (authentication required) naming the variable. An unknown method is -32602.
 *
 * @param catalog The models and providers
 * @param id The method the client picked
 * @throws {RequestError} When the variable is not set or the method is unknown
 */
export function authenticate(catalog: Pick<ModelCatalog, "apiKeyVariables">, id: unknown): void {
  const variables = catalog.apiKeyVariables();
  const variable = variables.find((candidate) => methodId(candidate) === id);
  if (!variable) {
    const known = variables.map(methodId).map((name) => `"${name}"`).join(", ");
    throw RequestError.invalidParams(
      undefined,
      `methodId: expected one of ${known || "(none)"}, got ${JSON.stringify(id)}`,
    );
  }
  if (!variable.set) throw missingKey(variable);
}

/**
 * The error for a session whose model needs a key that is not set: -32000, with the method to
 * show in `data`.
 *
 * @param variable The missing variable
 * @param model The model that needs it, when a session asked for it
 * @returns The error to throw
 */
export function missingKey(variable: ApiKeyVariable, model?: string): RequestError {
  const needs = model === undefined ? "" : ` (the model ${model} needs it)`;
  return RequestError.authRequired(
    { authMethods: [methodId(variable)] },
    `${variable.env} is not set${needs}: set it in the agent's environment and restart it`,
  );
}
