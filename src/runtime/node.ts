import type * as HttpListener from "./node_http.ts";
import process from "node:process";
import { Readable, Writable } from "node:stream";
import { setImmediate } from "node:timers";
import { type CliPlatform, runCli } from "../cli.ts";
import { NodeHost } from "../host/node_host.ts";

/**
 * The platform pieces shared by the Node.js and Bun entry points.
 *
 * @returns Args, host, stderr and signal handling on `node:process`
 */
export function nodePlatformBase(): Omit<CliPlatform, "stdin" | "stdout"> {
  return {
    args: process.argv.slice(2),
    host: new NodeHost(),
    writeStderr: (text) => void process.stderr.write(text),
    defer: (task) => void setImmediate(task),
    onShutdownSignal(handler) {
      process.on("SIGINT", handler);
      process.on("SIGTERM", handler);
      return () => {
        process.off("SIGINT", handler);
        process.off("SIGTERM", handler);
      };
    },
  };
}

/** Runs the CLI on Node.js and exits with its code. */
export async function main(): Promise<void> {
  const code = await runCli({
    ...nodePlatformBase(),
    serveHttp: async (handler, options) =>
      // The `+` keeps the HTTP listener out of Deno's start-up module graph (./main.ts).
      await (await (import("./node_http" + ".ts") as Promise<typeof HttpListener>)).serveHttp(
        handler,
        options,
      ),
    stdin: Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
    stdout: Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  });
  process.exit(code);
}
