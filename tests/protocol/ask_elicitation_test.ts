/**
 * The `elicitation/create` asker: what it sends, and that only a well-formed answer fitting the
 * form is an `accept` (fail closed: errors decline, timeouts and withdrawals cancel).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { AgentContext } from "@agentclientprotocol/sdk";
import { createLogger } from "../../src/log/logger.ts";
import {
  createElicitationAsker,
  type ElicitationModes,
  readElicitationAnswer,
} from "../../src/protocol/ask_elicitation.ts";
import type { ElicitationQuestion, ElicitationRequest } from "../../src/tools/elicitation.ts";

const FORM: ElicitationRequest = {
  mode: "form",
  message: "Name and size?",
  requestedSchema: {
    type: "object",
    properties: { name: { type: "string" }, size: { type: "string", enum: ["S", "M"] } },
    required: ["name"],
  },
};

const URL_QUESTION: ElicitationRequest = {
  mode: "url",
  message: "Log in",
  url: "https://login.example.test/",
  elicitationId: "flow-1",
};

interface Sent {
  readonly method: string;
  readonly params: unknown;
  readonly signal: AbortSignal | undefined;
}

/** A client context whose answer to each request is `answer(params)`. */
function fakeClient(
  answer: (params: unknown, signal: AbortSignal | undefined) => Promise<unknown>,
): { client: AgentContext; sent: Sent[] } {
  const sent: Sent[] = [];
  const client = {
    request(method: string, params: unknown, options?: { cancellationSignal?: AbortSignal }) {
      const signal = options?.cancellationSignal;
      sent.push({ method, params, signal });
      return answer(params, signal);
    },
    notify: () => Promise.resolve(),
  } as unknown as AgentContext;
  return { client, sent };
}

/** Rejects once `signal` aborts (as the SDK does with `stopWaitingOnCancel`). */
function untilAborted(signal: AbortSignal | undefined): Promise<never> {
  return new Promise((_resolve, reject) =>
    signal?.addEventListener("abort", () => reject(new Error("cancelled")), { once: true })
  );
}

const BOTH: ElicitationModes = { form: true, url: true };

function question(
  request: ElicitationRequest,
  signal = new AbortController().signal,
): ElicitationQuestion {
  return { sessionId: "s1", toolCallId: "c1", request, signal };
}

Deno.test("createElicitationAsker() sends the form or the URL, scoped to the session and the call", async () => {
  const { client, sent } = fakeClient(() => Promise.resolve({ action: "decline" }));
  const ask = createElicitationAsker(client, BOTH, createLogger("error", () => {}));
  assert.deepEqual(await ask(question(FORM)), { action: "decline" });
  assert.deepEqual(await ask(question(URL_QUESTION)), { action: "decline" });
  assert.deepEqual(sent.map(({ method, params }) => ({ method, params })), [
    {
      method: "elicitation/create",
      params: {
        sessionId: "s1",
        toolCallId: "c1",
        mode: "form",
        message: "Name and size?",
        requestedSchema: FORM.mode === "form" ? FORM.requestedSchema : undefined,
      },
    },
    {
      method: "elicitation/create",
      params: {
        sessionId: "s1",
        toolCallId: "c1",
        mode: "url",
        message: "Log in",
        url: "https://login.example.test/",
        elicitationId: "flow-1",
      },
    },
  ]);
});

Deno.test("createElicitationAsker() passes on a well-formed accept, its content held to the form", async () => {
  const { client } = fakeClient(() =>
    Promise.resolve({ action: "accept", content: { name: "Ada", size: "S", extra: 1 }, _meta: {} })
  );
  const ask = createElicitationAsker(client, BOTH, createLogger("error", () => {}));
  assert.deepEqual(await ask(question(FORM)), {
    action: "accept",
    content: { name: "Ada", size: "S" },
  });
  const url = fakeClient(() => Promise.resolve({ action: "accept", content: { ignored: "x" } }));
  const askUrl = createElicitationAsker(url.client, BOTH, createLogger("error", () => {}));
  assert.deepEqual(await askUrl(question(URL_QUESTION)), { action: "accept" });
});

Deno.test("createElicitationAsker() declines a malformed answer, a client error and a mode not advertised", async () => {
  const lines: string[] = [];
  const logger = createLogger("info", (line) => lines.push(line));
  const malformed: unknown[] = [
    null,
    "accept",
    {},
    { action: "Accept" },
    { action: "_custom" },
    { action: "accept", content: { size: "S" } },
    { action: "accept", content: { name: "Ada", size: "XL" } },
    { action: "accept", content: "Ada" },
  ];
  for (const answer of malformed) {
    const { client } = fakeClient(() => Promise.resolve(answer));
    const ask = createElicitationAsker(client, BOTH, logger);
    assert.deepEqual(await ask(question(FORM)), { action: "decline" }, JSON.stringify(answer));
  }
  const failing = fakeClient(() => Promise.reject(new Error("Method not found")));
  assert.deepEqual(await createElicitationAsker(failing.client, BOTH, logger)(question(FORM)), {
    action: "decline",
  });
  const formOnly = fakeClient(() => Promise.resolve({ action: "accept" }));
  const ask = createElicitationAsker(formOnly.client, { form: true, url: false }, logger);
  assert.deepEqual(await ask(question(URL_QUESTION)), { action: "decline" });
  const urlOnly = createElicitationAsker(formOnly.client, { form: false, url: true }, logger);
  assert.deepEqual(await urlOnly(question(FORM)), { action: "decline" });
  assert.equal(formOnly.sent.length, 0, "a mode the client did not advertise is never sent");
  const broken = createElicitationAsker(formOnly.client, BOTH, logger);
  const badForm = { ...FORM, requestedSchema: { type: "array" } } as unknown as ElicitationRequest;
  assert.deepEqual(await broken(question(badForm)), { action: "decline" });
  assert.equal(formOnly.sent.length, 0, "a malformed form is never sent");
  assert.ok(lines.some((line) => line.includes("malformed elicitation answer; declining")));
  assert.ok(lines.some((line) => line.includes("elicitation request failed; declining")));
});

Deno.test("createElicitationAsker() cancels on a timeout and on a withdrawn question, and the request is cancelled", async () => {
  const { client, sent } = fakeClient((_params, signal) => untilAborted(signal));
  const logger = createLogger("error", () => {});
  const timed = createElicitationAsker(client, BOTH, logger, { timeoutMs: 20 });
  assert.deepEqual(await timed(question(FORM)), { action: "cancel" });
  assert.equal(sent[0]?.signal?.aborted, true, "the request was cancelled ($/cancel_request)");
  const controller = new AbortController();
  const ask = createElicitationAsker(client, BOTH, logger);
  const asking = ask(question(FORM, controller.signal));
  controller.abort();
  assert.deepEqual(await asking, { action: "cancel" });
  assert.equal(sent[1]?.signal?.aborted, true);
  assert.deepEqual(await ask(question(FORM, controller.signal)), { action: "cancel" });
  assert.equal(sent.length, 2, "an already withdrawn question is not sent");
});

Deno.test("readElicitationAnswer() reads decline, cancel and accept only", () => {
  assert.deepEqual(readElicitationAnswer({ action: "cancel" }, FORM), { action: "cancel" });
  assert.deepEqual(readElicitationAnswer({ action: "decline", content: { name: "x" } }, FORM), {
    action: "decline",
  });
  assert.deepEqual(readElicitationAnswer({ action: "accept" }, FORM), {
    problem: "content.name: required",
  });
  assert.deepEqual(readElicitationAnswer([], FORM), { problem: "result: expected an object" });
});
