import type * as HttpListener from "./node_http.ts";
import process from "node:process";
import { Readable, Writable } from "node:stream";
import { runCli } from "../cli/cli.ts";
import { nodePlatformBase } from "./node_platform.ts";

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
