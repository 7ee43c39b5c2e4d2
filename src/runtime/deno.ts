import type * as HttpListener from "./deno_http.ts";
import process from "node:process";
import { Readable } from "node:stream";
import { setImmediate } from "node:timers";
import { runCli } from "../cli.ts";
import { NodeHost } from "../host/node_host.ts";

/**
 * Runs the CLI on Deno and exits with its code.
 *
 * stdin goes through `node:process`; stdout through `Deno.stdout.writable`. Deno 2.9's
 * `process.stdout` writes synchronously: a write larger than the room left in the pipe (64 KiB on
 * Linux), such as a `session/load` replay batch, held the whole server until the client read it.
 * `Deno.stdout.writable` waits for the client without blocking; the protocol stream coalesces the
 * messages sent while a write is under way, so it costs nothing in the bench's throughput, prompt
 * round trip or first-update figures, and `session/load` got about 15–20 % faster.
 */
export async function main(): Promise<void> {
  const encoder = new TextEncoder();
  const signals = ["SIGINT", "SIGTERM"] as const;
  const code = await runCli({
    args: Deno.args,
    host: new NodeHost(Deno.env.toObject()),
    stdin: Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
    stdout: Deno.stdout.writable,
    writeStderr: (text) => void Deno.stderr.writeSync(encoder.encode(text)),
    defer: (task) => void setImmediate(task),
    serveHttp: async (handler, options) =>
      // The `+` keeps the HTTP listener out of Deno's start-up module graph (./main.ts).
      await (await (import("./deno_http" + ".ts") as Promise<typeof HttpListener>)).serveHttp(
        handler,
        options,
      ),
    onShutdownSignal(handler) {
      for (const signal of signals) Deno.addSignalListener(signal, handler);
      return () => {
        for (const signal of signals) Deno.removeSignalListener(signal, handler);
      };
    },
  });
  Deno.exit(code);
}
