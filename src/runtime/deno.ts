import type * as HttpListener from "./deno_http.ts";
import process from "node:process";
import { Readable, Writable } from "node:stream";
import { setImmediate } from "node:timers";
import { runCli } from "../cli.ts";
import { NodeHost } from "../host/node_host.ts";

/**
 * Runs the CLI on Deno and exits with its code.
 *
 * stdio goes through `node:process` streams: in Deno 2.9 they are several times faster for many
 * small writes than `Deno.stdout.writable` (measured by `deno task bench`).
 */
export async function main(): Promise<void> {
  const encoder = new TextEncoder();
  const signals = ["SIGINT", "SIGTERM"] as const;
  const code = await runCli({
    args: Deno.args,
    host: new NodeHost(Deno.env.toObject()),
    stdin: Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
    stdout: Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
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
