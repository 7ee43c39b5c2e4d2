import type { AnyMessage, Stream } from "./acp.ts";

/**
 * Two cross-wired message streams: what one side writes, the other reads. For tests and
 * in-process embedding; closing one side's writable ends the other side's readable.
 *
 * @example Passing a message across
 * ```ts
 * import assert from "node:assert/strict";
 * import { createMemoryPair } from "./memory.ts";
 * const [a, b] = createMemoryPair();
 * const writer = a.writable.getWriter();
 * void writer.write({ jsonrpc: "2.0", method: "ping" });
 * const { value } = await b.readable.getReader().read();
 * assert(value && "method" in value && value.method === "ping");
 * await writer.close();
 * ```
 *
 * @returns The two ends
 */
export function createMemoryPair(): [Stream, Stream] {
  const forward = new TransformStream<AnyMessage, AnyMessage>();
  const backward = new TransformStream<AnyMessage, AnyMessage>();
  return [
    { readable: backward.readable, writable: forward.writable },
    { readable: forward.readable, writable: backward.writable },
  ];
}
