import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger.ts";
import { ElicitationRelay } from "../../src/session/elicitation_relay.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import type {
  ElicitationAsker,
  ElicitationRequest,
  RelayedElicitation,
} from "../../src/tools/elicitation.ts";

const FORM: ElicitationRequest = {
  mode: "form",
  message: "Name?",
  requestedSchema: { type: "object", properties: { name: { type: "string" } } },
};

/** A relay over `ask`, with what it did in order and the log lines. */
function relayOf(ask: ElicitationAsker): {
  relay: ElicitationRelay;
  events: string[];
  records: StoredEvent[];
  lines: string[];
} {
  const events: string[] = [];
  const records: StoredEvent[] = [];
  const lines: string[] = [];
  const relay = new ElicitationRelay({
    sessionId: "s1",
    ask: (question) => {
      events.push("ask");
      return ask(question);
    },
    output: {
      record: (recorded, commit) => {
        events.push(`record commit=${commit}`);
        records.push(...recorded);
      },
      flush: () => events.push("flush"),
    },
    logger: createLogger("info", (line) => lines.push(line)),
  });
  return { relay, events, records, lines };
}

function relayed(
  request: ElicitationRequest,
  signal = new AbortController().signal,
): RelayedElicitation {
  return { tool: "mcp__docs__login", toolCallId: "c7", request, signal };
}

Deno.test("ElicitationRelay: what the session holds goes first, then the question; the answer is logged and recorded", async () => {
  const { relay, events, records, lines } = relayOf((question) => {
    assert.deepEqual(question, {
      sessionId: "s1",
      toolCallId: "c7",
      request: FORM,
      signal: question.signal,
    });
    return Promise.resolve({ action: "accept", content: { name: "Ada" } });
  });
  assert.deepEqual(await relay.relay(relayed(FORM)), {
    action: "accept",
    content: { name: "Ada" },
  });
  assert.deepEqual(events, ["flush", "ask", "record commit=true"]);
  assert.deepEqual(records, [{
    type: "elicitation",
    toolCallId: "c7",
    tool: "mcp__docs__login",
    mode: "form",
    message: "Name?",
    action: "accept",
    content: { name: "Ada" },
  }]);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /elicitation: answered/);
  assert.match(lines[0]!, /"action":"accept"/);
  assert.doesNotMatch(lines[0]!, /Ada/, "the answer's content is not logged");
});

Deno.test("ElicitationRelay: a URL is recorded redacted, a long message cut, a large answer left out", async () => {
  const url: ElicitationRequest = {
    mode: "url",
    message: "m".repeat(5000),
    url: "https://user:pw@login.example.test/cb?token=secret&page=2",
    elicitationId: "flow-1",
  };
  const { relay, records } = relayOf(() => Promise.resolve({ action: "accept" }));
  await relay.relay(relayed(url));
  const [record] = records as Array<Extract<StoredEvent, { type: "elicitation" }>>;
  assert.equal(record?.url, "https://login.example.test/cb?token=[redacted]&page=2");
  assert.equal(record?.message, `${"m".repeat(4000)}…`);
  const big = relayOf(() =>
    Promise.resolve({ action: "accept", content: { name: "x".repeat(20_000) } })
  );
  await big.relay.relay(relayed(FORM));
  const [large] = big.records as Array<Extract<StoredEvent, { type: "elicitation" }>>;
  assert.equal(large?.content, undefined);
  assert.equal(large?.contentLeftOut, true);
});

Deno.test("ElicitationRelay: a withdrawn question is not asked; an asker that throws declines", async () => {
  const controller = new AbortController();
  controller.abort();
  const withdrawn = relayOf(() => Promise.reject(new Error("must not be asked")));
  assert.deepEqual(await withdrawn.relay.relay(relayed(FORM, controller.signal)), {
    action: "cancel",
  });
  assert.deepEqual(withdrawn.events, ["record commit=true"]);
  const throwing = relayOf(() => Promise.reject(new Error("broken")));
  assert.deepEqual(await throwing.relay.relay(relayed(FORM)), { action: "decline" });
  assert.equal((throwing.records[0] as { action?: string }).action, "decline");
});
