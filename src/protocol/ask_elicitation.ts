/**
 * The `elicitation/create` round trip: a running tool call's question to the user, asked of the
 * client in the modes it advertised, with the permission requests' timeout, cancellation and
 * fail-closed rules.
 *
 * @module
 */
import {
  type AgentContext,
  type CreateElicitationRequest,
  methods,
} from "@agentclientprotocol/sdk";
import type { Logger } from "../log/logger.ts";
import type { ClientCapabilities } from "../transport/acp_types.ts";
import {
  checkContent,
  type ElicitationAnswer,
  type ElicitationAsker,
  type ElicitationQuestion,
  type ElicitationRequest,
  schemaProblem,
} from "../tools/elicitation.ts";
import { isRecord } from "../util/json.ts";
import { redactUrls } from "../util/redact_urls.ts";
import { DEFAULT_PERMISSION_TIMEOUT_MS } from "./ask_permission.ts";

/** The elicitation modes a client advertised (`clientCapabilities.elicitation`). */
export interface ElicitationModes {
  /** `elicitation.form` is set: forms can be shown. */
  readonly form: boolean;
  /** `elicitation.url` is set: the user can be sent to a URL. */
  readonly url: boolean;
}

/**
 * The elicitation modes a client advertised. ACP advertises each mode on its own: an
 * `elicitation: {}` without `form` or `url` advertises none (unlike MCP, where `{}` means form).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { elicitationModes } from "./ask_elicitation.ts";
 * assert.deepEqual(elicitationModes({ elicitation: { form: {} } }), { form: true, url: false });
 * assert.deepEqual(elicitationModes({ elicitation: {} }), { form: false, url: false });
 * assert.deepEqual(elicitationModes({}), { form: false, url: false });
 * ```
 *
 * @param capabilities The client's capabilities from `initialize`
 * @returns The modes
 */
export function elicitationModes(capabilities: ClientCapabilities): ElicitationModes {
  const elicitation = capabilities.elicitation;
  return {
    form: isRecord(elicitation?.form),
    url: isRecord(elicitation?.url),
  };
}

/** Options of {@link createElicitationAsker}. */
export interface ElicitationAskerOptions {
  /**
   * How long to wait for an answer before giving up (`cancel`), in milliseconds.
   * @default {DEFAULT_PERMISSION_TIMEOUT_MS}
   */
  readonly timeoutMs?: number;
}

/**
 * Asks through `elicitation/create`, scoped to the session and the asking tool call: a form
 * (`mode: "form"` with the requested schema) or a URL (`mode: "url"`), each only when the client
 * advertised that mode. Fails closed: only a well-formed `accept` whose content fits the form is an
 * `accept`; a mode the client did not advertise, a malformed form, a malformed answer (an unknown
 * action included) and a client error are `decline`; no answer within the timeout, or a question
 * withdrawn (the call cancelled: the request is cancelled with `$/cancel_request`), is `cancel`.
 *
 * @param client The connection's client context
 * @param modes The modes the client advertised
 * @param logger Told about odd answers and failures
 * @param options The answer timeout
 * @returns The asker sessions use
 */
export function createElicitationAsker(
  client: AgentContext,
  modes: ElicitationModes,
  logger: Logger,
  options: ElicitationAskerOptions = {},
): ElicitationAsker {
  const timeoutMs = options.timeoutMs ?? DEFAULT_PERMISSION_TIMEOUT_MS;
  return async (question: ElicitationQuestion): Promise<ElicitationAnswer> => {
    const { request, signal } = question;
    if (signal.aborted) return { action: "cancel" };
    const log = { sessionId: question.sessionId, toolCallId: question.toolCallId };
    if (!modes[request.mode]) {
      logger.info("elicitation declined: the client does not take this mode", {
        ...log,
        mode: request.mode,
      });
      return { action: "decline" };
    }
    const problem = request.mode === "form" ? schemaProblem(request.requestedSchema) : undefined;
    if (problem !== undefined) {
      logger.warn("elicitation declined: malformed form", { ...log, problem });
      return { action: "decline" };
    }
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), timeoutMs);
    try {
      logger.debug("asking the user", { ...log, mode: request.mode });
      const response: unknown = await client.request(
        methods.client.elicitation.create,
        createParams(question),
        {
          cancellationSignal: AbortSignal.any([signal, timeout.signal]),
          stopWaitingOnCancel: true,
        },
      );
      const answer = readElicitationAnswer(response, request);
      if ("problem" in answer) {
        logger.warn("malformed elicitation answer; declining", { ...log, problem: answer.problem });
        return { action: "decline" };
      }
      return answer;
    } catch (error) {
      if (signal.aborted) return { action: "cancel" };
      if (timeout.signal.aborted) {
        logger.warn("elicitation timed out; cancelling", { ...log, timeoutMs });
        return { action: "cancel" };
      }
      logger.warn("elicitation request failed; declining", {
        ...log,
        error: error instanceof Error ? error.message : String(error),
      });
      return { action: "decline" };
    } finally {
      clearTimeout(timer);
    }
  };
}

/** The form of an `elicitation/create` in form mode. */
type FormSchema = Extract<CreateElicitationRequest, { mode: "form" }>["requestedSchema"];

/** The `elicitation/create` params of a question. */
function createParams(question: ElicitationQuestion): CreateElicitationRequest {
  const { request, sessionId, toolCallId } = question;
  if (request.mode === "form") {
    return {
      sessionId,
      toolCallId,
      mode: "form",
      message: request.message,
      // Checked by `schemaProblem` (its fields are passed on as the asker gave them).
      requestedSchema: request.requestedSchema as FormSchema,
    };
  }
  return {
    sessionId,
    toolCallId,
    mode: "url",
    message: request.message,
    url: request.url,
    elicitationId: request.elicitationId,
  };
}

/**
 * Reads an `elicitation/create` answer strictly: `{action: "accept", content?}` (for a form, the
 * content held to it by {@link checkContent}; for a URL, no content), `{action: "decline"}` or
 * `{action: "cancel"}`. Any other action, custom ones included, is a problem.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { readElicitationAnswer } from "./ask_elicitation.ts";
 * const form = {
 *   mode: "form" as const,
 *   message: "Name?",
 *   requestedSchema: { type: "object" as const, properties: { name: { type: "string" } } },
 * };
 * assert.deepEqual(readElicitationAnswer({ action: "accept", content: { name: "Ada" } }, form), {
 *   action: "accept",
 *   content: { name: "Ada" },
 * });
 * assert.deepEqual(readElicitationAnswer({ action: "decline" }, form), { action: "decline" });
 * assert.deepEqual(readElicitationAnswer({ action: "maybe" }, form), {
 *   problem: 'action: expected "accept", "decline" or "cancel"',
 * });
 * ```
 *
 * @param response The result the client sent, unchecked
 * @param request What was asked
 * @returns The answer, or what is wrong with it
 */
export function readElicitationAnswer(
  response: unknown,
  request: ElicitationRequest,
): ElicitationAnswer | { readonly problem: string } {
  if (!isRecord(response)) return { problem: "result: expected an object" };
  const action = response.action;
  if (action === "decline" || action === "cancel") return { action };
  if (action !== "accept") return { problem: 'action: expected "accept", "decline" or "cancel"' };
  if (request.mode === "url") return { action: "accept" };
  const checked = checkContent(request.requestedSchema, response.content);
  return "problem" in checked ? checked : { action: "accept", content: checked.content };
}

/**
 * Tells the client that a URL question's flow is done (`elicitation/complete`).
 *
 * @param client The connection's client context
 * @param elicitationId The flow's id, as the question named it
 * @param logger Told when the notification cannot be sent
 */
export function completeElicitation(
  client: AgentContext,
  elicitationId: string,
  logger: Logger,
): void {
  client.notify(methods.client.elicitation.complete, { elicitationId }).catch((error: unknown) =>
    logger.debug("elicitation/complete not sent", {
      elicitationId,
      error: redactUrls(String(error)),
    })
  );
}
