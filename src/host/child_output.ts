/**
 * Small helpers for the child processes the server talks to over pipes (MCP servers, delegated
 * agents): the end of what a child wrote to stderr, and waiting a bounded time for its exit.
 *
 * @module
 */
import type { PipedHostProcess } from "./host.ts";

/**
 * Keeps the last `max` characters a stream carried (a child's stderr, for error messages).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { StreamTail } from "./child_output.ts";
 * const tail = new StreamTail(5);
 * await tail.read(new Blob(["hello world"]).stream());
 * assert.equal(tail.text, "world");
 * ```
 */
export class StreamTail {
  readonly #max: number;
  #text = "";
  #truncated = false;

  /** @param max Most characters kept */
  constructor(max: number) {
    this.#max = max;
  }

  /** What was kept so far. */
  get text(): string {
    return this.#text;
  }

  /** Whether the stream carried more than was kept (the kept text starts mid-stream). */
  get truncated(): boolean {
    return this.#truncated;
  }

  /**
   * Reads the stream to its end (or its failure: what was read is kept). Never rejects.
   *
   * @param stream The stream
   */
  async read(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        const text = this.#text + decoder.decode(chunk, { stream: true });
        if (text.length > this.#max) this.#truncated = true;
        this.#text = text.slice(-this.#max);
      }
    } catch {
      // The process ended; what was read is kept.
    }
  }
}

/**
 * Whether a child exits within `ms` (the timer is cleared either way).
 *
 * @param child The child
 * @param ms Longest wait
 * @returns Whether it exited in time
 */
export async function exitsWithin(child: PipedHostProcess, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([child.exited.then(() => true), late]);
  } finally {
    clearTimeout(timer);
  }
}
