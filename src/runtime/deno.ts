import process from "node:process";
import { Socket } from "node:net";
import { Readable, Writable } from "node:stream";
import { setImmediate } from "node:timers";
import { runCli } from "../cli/cli.ts";
import { NodeHost } from "../host/node_host.ts";
import { loadDenoHttp } from "./lazy.ts";

/**
 * Runs the CLI on Deno and exits with its code.
 *
 * On a pipe or a socket (how clients start the server), stdin and stdout are `node:net` sockets
 * over descriptors 0 and 1: they read and write without blocking the process and without a
 * thread. Deno 2.9's `process.stdout` writes synchronously, so a write larger than the room left
 * in the pipe (64 KiB on Linux), such as a `session/load` replay batch, held the whole server
 * until the client read it. `Deno.stdout.writable` does not block but hands every write to a
 * thread and back, which with `process.stdin` for reading made every prompt's round trip slower
 * (bench/RESULTS.md). A file or a terminal keeps `process.stdin` and `Deno.stdout.writable`.
 */
export async function main(): Promise<void> {
  const encoder = new TextEncoder();
  const signals = ["SIGINT", "SIGTERM"] as const;
  const stdout: WritableStream<Uint8Array> = isPipe(1)
    ? Writable.toWeb(new Socket({ fd: 1, readable: false, writable: true })) as WritableStream<
      Uint8Array
    >
    : Deno.stdout.writable;
  let stdin: ReadableStream<Uint8Array> | undefined;
  const code = await runCli({
    args: Deno.args,
    host: new NodeHost(Deno.env.toObject()),
    // Made on first use: `run` with its prompt in its arguments never reads stdin, and a socket
    // over a piped descriptor 0 closes it at its end, whenever that comes: by then descriptor 0
    // may be a child's pipe (an MCP server's, which then failed to start).
    get stdin(): ReadableStream<Uint8Array> {
      return stdin ??= Readable.toWeb(
        isPipe(0) ? new Socket({ fd: 0, readable: true, writable: false }) : process.stdin,
      ) as unknown as ReadableStream<Uint8Array>;
    },
    stdout,
    writeStderr: (text) => void Deno.stderr.writeSync(encoder.encode(text)),
    stderrIsTerminal: Deno.stderr.isTerminal(),
    stdinIsTerminal: Deno.stdin.isTerminal(),
    defer: (task) => void setImmediate(task),
    serveHttp: async (handler, options) => (await loadDenoHttp()).serveHttp(handler, options),
    onShutdownSignal(handler) {
      for (const signal of signals) Deno.addSignalListener(signal, handler);
      return () => {
        for (const signal of signals) Deno.removeSignalListener(signal, handler);
      };
    },
    onReloadSignal(handler) {
      Deno.addSignalListener("SIGHUP", handler);
      return () => Deno.removeSignalListener("SIGHUP", handler);
    },
  });
  Deno.exit(code);
}

/**
 * Whether descriptor `fd` is a pipe or a socket, which `node:net` serves without blocking. Asked of
 * `/dev/fd/<fd>` (Linux, macOS) with Deno's own `statSync`: `node:fs` is not loaded at start-up.
 */
function isPipe(fd: number): boolean {
  try {
    const info = Deno.statSync(`/dev/fd/${fd}`);
    return info.isFifo === true || info.isSocket === true;
  } catch {
    return false;
  }
}
