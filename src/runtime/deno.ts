import { runCli } from "../cli.ts";
import { NodeHost } from "../host/node_host.ts";

/** Runs the CLI on Deno and exits with its code. */
export async function main(): Promise<void> {
  const encoder = new TextEncoder();
  const signals = ["SIGINT", "SIGTERM"] as const;
  const code = await runCli({
    args: Deno.args,
    host: new NodeHost(Deno.env.toObject()),
    stdin: Deno.stdin.readable,
    stdout: Deno.stdout.writable,
    writeStderr: (text) => void Deno.stderr.writeSync(encoder.encode(text)),
    onShutdownSignal(handler) {
      for (const signal of signals) Deno.addSignalListener(signal, handler);
      return () => {
        for (const signal of signals) Deno.removeSignalListener(signal, handler);
      };
    },
  });
  Deno.exit(code);
}
