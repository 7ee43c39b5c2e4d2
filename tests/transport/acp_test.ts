import assert from "node:assert/strict";
import { fastPathsOf, type Stream } from "../../src/transport/acp.ts";
import { createMemoryPair } from "../../src/transport/memory.ts";
import { ndJsonStream } from "../../src/transport/nd_json_stream.ts";

Deno.test("fastPathsOf() finds the fast paths of an NDJSON stream", async () => {
  const output = new TransformStream<Uint8Array, Uint8Array>();
  const stream = ndJsonStream(output.writable, new ReadableStream({ start: (c) => c.close() }));
  assert.equal(fastPathsOf(stream), stream);
  const fast = fastPathsOf(stream);
  assert(fast);
  const text = new Response(output.readable).text();
  assert.equal(fast.writeMessage({ jsonrpc: "2.0", method: "a" }), undefined);
  await fast.writeMany([{ jsonrpc: "2.0", method: "b" }]);
  await fast.writeFrames(new TextEncoder().encode('{"jsonrpc":"2.0","method":"c"}\n'));
  assert.equal(await fast.messages.read(), undefined);
  await stream.writable.close();
  assert.equal(
    await text,
    '{"jsonrpc":"2.0","method":"a"}\n{"jsonrpc":"2.0","method":"b"}\n{"jsonrpc":"2.0","method":"c"}\n',
  );
});

Deno.test("fastPathsOf() is undefined for a plain stream pair or one with only some of them", () => {
  const [memory] = createMemoryPair();
  assert.equal(fastPathsOf(memory), undefined);
  const some: Stream & { writeMessage(): undefined } = {
    ...memory,
    writeMessage: () => undefined,
  };
  assert.equal(fastPathsOf(some), undefined);
});
