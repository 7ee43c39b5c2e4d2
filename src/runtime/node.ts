import process from "node:process";
import { Readable, Writable } from "node:stream";
import { runCli } from "../cli/cli.ts";
import { nodePlatformBase } from "./node_platform.ts";
import { loadNodeHttp } from "./lazy.ts";

/** Runs the CLI on Node.js and exits with its code. */
export async function main(): Promise<void> {
  const code = await runCli({
    ...nodePlatformBase(),
    serveHttp: async (handler, options) => (await loadNodeHttp()).serveHttp(handler, options),
    stdin: Readable.toWeb(process.stdin) as unknown as ReadableStream<Uint8Array>,
    stdout: Writable.toWeb(process.stdout) as WritableStream<Uint8Array>,
  });
  process.exit(code);
}
