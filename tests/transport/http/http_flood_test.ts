/**
 * Request floods over the HTTP profiles (issue 27, item 2): many `session/list` POSTed at once on
 * one `/acp` connection and on one `/v1/acp/:id` key. Both are bounded without more: a POST on
 * `/acp` gets its `202` only once the connection has read it (so past the connection's bound on
 * requests in flight it waits), a request POSTed on `/v1/acp/:id` waits for its answer, so what
 * waits is held by the client's own HTTP requests (and sockets, which the listener caps). Every
 * one is answered and the server keeps serving. Driven through the transport's handler, without
 * a socket.
 *
 * @module
 */
import assert from "node:assert/strict";
import { startHandler } from "./_request.ts";

const JSON_HEADERS = { "content-type": "application/json" };
/** Requests in one flood, and how many the client has in the air at once. */
const FLOOD = 2_000;
const PARALLEL = 200;
const MAX_IN_FLIGHT = 4;

const initialize = JSON.stringify({
  jsonrpc: "2.0",
  id: "init",
  method: "initialize",
  params: { protocolVersion: 1, clientCapabilities: {} },
});

const list = (id: number): string =>
  JSON.stringify({ jsonrpc: "2.0", id, method: "session/list", params: {} });

/** Sends `count` POSTs, at most `PARALLEL` at a time; resolves with their statuses. */
async function postAll(
  count: number,
  send: (id: number) => Promise<Response>,
  check: (response: Response, id: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: PARALLEL }, async () => {
    while (next < count) {
      const id = next++;
      await check(await send(id), id);
    }
  }));
}

Deno.test("a POST flood on one /acp connection is handled a few at a time and answered in full", async () => {
  await using server = startHandler({ config: { maxRequestsInFlight: MAX_IN_FLIGHT } });
  const url = `${server.url}/acp`;
  const opened = await server.fetch(url, {
    method: "POST",
    headers: JSON_HEADERS,
    body: initialize,
  });
  assert.equal(opened.status, 200);
  await opened.body?.cancel();
  const connectionId = opened.headers.get("acp-connection-id")!;
  const headers = { ...JSON_HEADERS, "acp-connection-id": connectionId };
  // The answers come on the connection's event stream.
  const events = await server.fetch(url, {
    headers: { accept: "text/event-stream", "acp-connection-id": connectionId },
  });
  const answered = new Set<number>();
  const reading = (async () => {
    const decoder = new TextDecoder();
    let text = "";
    for await (const chunk of events.body!) {
      text += decoder.decode(chunk, { stream: true });
      for (const match of text.matchAll(/"id":(\d+),"result"/g)) answered.add(Number(match[1]));
      text = text.slice(text.lastIndexOf("\n") + 1);
      if (answered.size === FLOOD) return;
    }
  })();
  await postAll(
    FLOOD,
    (id) => server.fetch(url, { method: "POST", headers, body: list(id) }),
    async (response, id) => {
      await response.body?.cancel();
      assert.equal(response.status, 202, `request ${id}`);
    },
  );
  await reading;
  assert.equal(answered.size, FLOOD);
  assert.equal(await (await server.fetch(`${server.url}/health`)).text(), "ok");
});

Deno.test("a POST flood on one /v1/acp/:id key is handled a few at a time and answered in full", async () => {
  await using server = startHandler({ config: { maxRequestsInFlight: MAX_IN_FLIGHT } });
  const url = `${server.url}/v1/acp/flood`;
  const opened = await server.fetch(url, {
    method: "POST",
    headers: JSON_HEADERS,
    body: initialize,
  });
  assert.equal(opened.status, 200);
  await opened.body?.cancel();
  await postAll(
    FLOOD,
    (id) => server.fetch(url, { method: "POST", headers: JSON_HEADERS, body: list(id) }),
    async (response, id) => {
      assert.equal(response.status, 200, `request ${id}`);
      const answer = await response.json() as { id: number; result?: unknown };
      assert.equal(answer.id, id);
      assert.ok(answer.result, `request ${id}: ${JSON.stringify(answer)}`);
    },
  );
  assert.equal(await (await server.fetch(`${server.url}/health`)).text(), "ok");
});
