import assert from "node:assert/strict";
import { createLogger } from "../../src/log/logger.ts";
import { outbound } from "../../src/server/outbound.ts";
import type { AnyMessage } from "../../src/transport/acp.ts";
import { ndJsonStream } from "../../src/transport/nd_json_stream.ts";

/** A transport: an NDJSON stream over an output that keeps what it is given, or a plain pair. */
function transport(ndjson: boolean): {
  stream: { readable: ReadableStream<AnyMessage>; writable: WritableStream<AnyMessage> };
  written(): Promise<unknown[]>;
} {
  if (ndjson) {
    let text = "";
    const decoder = new TextDecoder();
    const stream = ndJsonStream(
      new WritableStream<Uint8Array>({ write: (chunk) => void (text += decoder.decode(chunk)) }),
      new ReadableStream<Uint8Array>(),
    );
    return {
      stream,
      written: async () => {
        await stream.drained();
        return text.split("\n").filter((line) => line !== "").map((line) => JSON.parse(line));
      },
    };
  }
  const messages: unknown[] = [];
  return {
    stream: {
      readable: new ReadableStream<AnyMessage>(),
      writable: new WritableStream<AnyMessage>({ write: (message) => void messages.push(message) }),
    },
    written: () => Promise.resolve(messages),
  };
}

for (const ndjson of [true, false]) {
  Deno.test(`outbound: the SDK's writer-per-message path (${ndjson ? "NDJSON" : "plain"} transport)`, async () => {
    const { stream, written } = transport(ndjson);
    const lines: string[] = [];
    const answered: unknown[] = [];
    const described = outbound(
      stream,
      createLogger("warn", (line) => lines.push(line)),
      (id) => void answered.push(id),
    );
    const invalid = {
      jsonrpc: "2.0",
      id: 2,
      error: {
        code: -32602,
        message: "Invalid params",
        data: { _errors: [], prompt: { _errors: [], 0: { _errors: ["expected an object"] } } },
      },
    } as AnyMessage;
    const sent: AnyMessage[] = [
      { jsonrpc: "2.0", method: "session/update", params: { n: 1 } } as AnyMessage,
      { jsonrpc: "2.0", id: 1, result: {} } as AnyMessage,
      invalid,
    ];
    // As the SDK sends: a writer per message, released after its write.
    for (const message of sent) {
      const writer = described.writable.getWriter();
      await writer.write(message);
      writer.releaseLock();
    }
    assert.deepEqual(await written(), [
      sent[0],
      sent[1],
      {
        ...invalid,
        error: {
          code: -32602,
          message: "Invalid params: prompt.0: expected an object",
          data: (invalid as { error: { data: unknown } }).error.data,
        },
      },
    ]);
    assert.deepEqual(answered, [1, 2]);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /request failed .*"code":-32602/);
  });
}

Deno.test("outbound: a write that fails rejects the SDK's write", async () => {
  const described = outbound(
    ndJsonStream(new WritableStream<Uint8Array>(), new ReadableStream<Uint8Array>()),
    createLogger("error", () => {}),
  );
  const writer = described.writable.getWriter();
  // A value JSON cannot hold: the transport cannot serialize it.
  const unwritable = { jsonrpc: "2.0", id: 1, result: { n: 1n } } as unknown as AnyMessage;
  await assert.rejects(async () => await writer.write(unwritable), TypeError);
});

Deno.test("outbound: an answer that onAnswer says is followed waits for the task's write", async () => {
  let text = "";
  const decoder = new TextDecoder();
  const tasks: Array<() => void> = [];
  const encoder = new TextEncoder();
  const lines = [1, 2].map((id) => `{"jsonrpc":"2.0","id":${id},"method":"ping"}\n`).join("");
  const stream = ndJsonStream(
    new WritableStream<Uint8Array>({ write: (chunk) => void (text += decoder.decode(chunk)) }),
    new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(encoder.encode(lines));
        controller.close();
      },
    }),
    { defer: (task) => tasks.push(task) },
  );
  const described = outbound(stream, createLogger("error", () => {}), (id) => id === 1);
  const write = async (message: AnyMessage): Promise<void> => {
    const writer = described.writable.getWriter();
    await writer.write(message);
    writer.releaseLock();
  };
  await stream.messages.read();
  await write({ jsonrpc: "2.0", id: 1, result: {} } as AnyMessage);
  const output = (): string => text;
  assert.equal(output(), "", "a followed answer is held for the task");
  tasks.shift()?.();
  await stream.drained();
  assert.equal(output(), '{"jsonrpc":"2.0","id":1,"result":{}}\n');
  await stream.messages.read();
  await write({ jsonrpc: "2.0", id: 2, result: {} } as AnyMessage);
  assert.equal(output().split("\n").length - 1, 2, "any other answer is written at once");
});

Deno.test("outbound: a URL in an error's message loses its credentials", async () => {
  const { stream, written } = transport(false);
  const lines: string[] = [];
  const described = outbound(stream, createLogger("warn", (line) => lines.push(line)));
  const writer = described.writable.getWriter();
  await writer.write({
    jsonrpc: "2.0",
    id: 3,
    error: { code: -32603, message: "Cannot fetch http://u:SECRETP@127.0.0.1:1/?token=SECRETQ" },
  } as AnyMessage);
  assert.deepEqual(await written(), [{
    jsonrpc: "2.0",
    id: 3,
    error: { code: -32603, message: "Cannot fetch http://127.0.0.1:1/?token=[redacted]" },
  }]);
  assert.doesNotMatch(lines.join(""), /SECRET/);
});
