import process from "node:process";
import { runCli } from "../cli/cli.ts";
import { nodePlatformBase } from "./node_platform.ts";
import { loadBunHttp } from "./lazy.ts";

/** Bun's writer of a file or pipe (`Bun.stdout.writer()`). */
interface BunFileSink {
  /** Buffers `chunk`; returns how many bytes it buffered. */
  write(chunk: Uint8Array): number;
  /** Writes what is buffered; a promise while the pipe cannot take it all. */
  flush(): number | Promise<number>;
  /** Flushes and closes. */
  end(): number | Promise<number>;
}

interface BunGlobal {
  readonly stdin: { stream(): ReadableStream<Uint8Array> };
  readonly stdout: { writer(): BunFileSink };
}

/**
 * Runs the CLI on Bun and exits with its code: stdin is Bun's own stream, stdout its own writer.
 * `process.stdout` through `node:stream` would do too, but loading `node:stream` and making
 * `process.stdout` is a large part of Bun's start-up, before `initialize` can be answered, and
 * Bun's writer costs next to nothing (bench/RESULTS.md). A write waits until the pipe has taken
 * it, without blocking the process.
 */
export async function main(): Promise<void> {
  const bun = (globalThis as unknown as { Bun: BunGlobal }).Bun;
  const code = await runCli({
    ...nodePlatformBase(),
    serveHttp: async (handler, options) => (await loadBunHttp()).serveHttp(handler, options),
    stdin: bun.stdin.stream(),
    stdout: sinkWritable(bun.stdout.writer()),
  });
  process.exit(code);
}

/** A writable stream over Bun's writer: each write resolves once the writer has flushed it. */
function sinkWritable(sink: BunFileSink): WritableStream<Uint8Array> {
  return new WritableStream<Uint8Array>({
    async write(chunk) {
      sink.write(chunk);
      await sink.flush();
    },
    async close() {
      await sink.end();
    },
  });
}
