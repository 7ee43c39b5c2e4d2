import type * as HttpListener from "./bun_http.ts";
import process from "node:process";
import { Writable } from "node:stream";
import { runCli } from "../cli.ts";
import { nodePlatformBase } from "./node.ts";

interface BunGlobal {
  readonly stdin: { stream(): ReadableStream<Uint8Array> };
}

/** Runs the CLI on Bun (its native stdin stream, `node:` for the rest) and exits with its code. */
export async function main(): Promise<void> {
  const bun = (globalThis as unknown as { Bun: BunGlobal }).Bun;
  const code = await runCli({
    ...nodePlatformBase(),
    serveHttp: async (handler, options) =>
      // The `+` keeps the HTTP listener out of Deno's start-up module graph (./main.ts).
      await (await (import("./bun_http" + ".ts") as Promise<typeof HttpListener>)).serveHttp(
        handler,
        options,
      ),
    stdin: bun.stdin.stream(),
    stdout: Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  });
  process.exit(code);
}
