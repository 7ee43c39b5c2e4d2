/**
 * The HTTP transport's body and per-address limits, driven through its handler with request
 * bodies made piece by piece (as a socket that drips would deliver them) and peer addresses of
 * our choosing.
 *
 * @module
 */
import assert from "node:assert/strict";
import { pollUntil } from "../../_helpers/wait.ts";
import { startHandler } from "./_request.ts";

const INITIALIZE = '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}';

/** A body that arrives in `pieces` pieces of one byte each, each cut from a big buffer. */
function drip(text: string): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  let at = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (at === bytes.byteLength) return controller.close();
      // A runtime's read buffer, of which the piece is a view.
      const buffer = new Uint8Array(16 * 1024);
      buffer[0] = bytes[at++]!;
      controller.enqueue(buffer.subarray(0, 1));
    },
  }, { highWaterMark: 0 });
}

function post(url: string, body: BodyInit, headers: Record<string, string> = {}): Request {
  return new Request(url, {
    method: "POST",
    headers: { host: new URL(url).host, "content-type": "application/json", ...headers },
    body,
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  } as RequestInit);
}

Deno.test("HTTP transport: a body in thousands of one-byte pieces gets 408", async () => {
  await using http = startHandler();
  const body = INITIALIZE + " ".repeat(5000);
  const response = await http.transport.fetch(post(`${http.url}/acp`, drip(body)), {});
  assert.equal(response.status, 408);
  assert.match((await response.json()).detail, /pieces.*--body-timeout/);
  assert.equal(http.transport.connections, 0);
  // A body of a few pieces, however small, is read.
  const few = await http.transport.fetch(post(`${http.url}/acp`, drip(INITIALIZE)), {});
  assert.equal(few.status, 200);
  await few.body?.cancel();
});

Deno.test("HTTP transport: a body not complete within the body timeout gets 408", async () => {
  await using http = startHandler({ limits: { bodyTimeoutMs: 100 } });
  const stalled = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new TextEncoder().encode('{"jsonrpc":'));
    },
  });
  const response = await http.transport.fetch(post(`${http.url}/acp`, stalled), {});
  assert.equal(response.status, 408);
  assert.match((await response.json()).detail, /within 0\.1 s.*--body-timeout/);
});

Deno.test("HTTP transport: one address may open at most maxConnectionsPerAddress", async () => {
  await using http = startHandler({ limits: { maxConnectionsPerAddress: 2 } });
  const from = (remoteAddress: string) => ({ remoteAddress });
  const ids: string[] = [];
  for (let index = 0; index < 2; index++) {
    const opened = await http.transport.fetch(
      post(`${http.url}/acp`, INITIALIZE),
      from("10.0.0.1"),
    );
    assert.equal(opened.status, 200);
    ids.push(opened.headers.get("acp-connection-id")!);
    await opened.body?.cancel();
  }
  for (const path of ["/acp", "/v1/acp/third"]) {
    const refused = await http.transport.fetch(
      post(`${http.url}${path}`, INITIALIZE),
      from("10.0.0.1"),
    );
    assert.equal(refused.status, 429, path);
    assert.match((await refused.json()).detail, /--max-connections-per-address/);
  }
  const upgrade = await http.transport.upgrade(
    new Request(`${http.url}/acp`, {
      headers: { host: new URL(http.url).host, upgrade: "websocket" },
    }),
    from("10.0.0.1"),
  );
  assert(upgrade instanceof Response && upgrade.status === 429);
  // Another address is not held back.
  const other = await http.transport.fetch(
    post(`${http.url}/v1/acp/other`, INITIALIZE),
    from("10.0.0.2"),
  );
  assert.equal(other.status, 200);
  await other.body?.cancel();
  // One that closes makes room.
  const closed = await http.transport.fetch(
    new Request(`${http.url}/acp`, {
      method: "DELETE",
      headers: { host: new URL(http.url).host, "acp-connection-id": ids[0]! },
    }),
    from("10.0.0.1"),
  );
  await closed.body?.cancel();
  await http.waitForLog(/connection closed/);
  const again = await http.transport.fetch(post(`${http.url}/acp`, INITIALIZE), from("10.0.0.1"));
  assert.equal(again.status, 200);
  await again.body?.cancel();
});

Deno.test("HTTP transport: swept idle connections leave nothing registered", async () => {
  await using http = startHandler({
    limits: { idleTimeoutMs: 200, maxConnectionsPerAddress: 2 },
  });
  const open = async (remoteAddress: string): Promise<number> => {
    const opened = await http.transport.fetch(post(`${http.url}/acp`, INITIALIZE), {
      remoteAddress,
    });
    await opened.body?.cancel();
    return opened.status;
  };
  for (let round = 0; round < 3; round++) {
    assert.deepEqual(
      await Promise.all(["10.0.1.1", "10.0.1.1", "10.0.1.2", "10.0.1.2"].map(open)),
      [200, 200, 200, 200],
    );
    // The count is announced only in the log, line by line: polled.
    await pollUntil(() => http.transport.connections === 0, {
      what: "every idle connection swept",
    });
  }
  const closed = http.logs.filter((line) => /connection closed/.test(line)).length;
  assert.equal(closed, 12);
});
