/**
 * The platform pieces the Node.js and Bun entry points share: arguments, host, stderr, deferred
 * tasks and shutdown signals on `node:process`. Apart from their stdio (the Bun entry loads no
 * `node:stream`, which is slow for Bun to load).
 *
 * @module
 */
import process from "node:process";
import { setImmediate } from "node:timers";
import type { CliPlatform } from "../cli/cli.ts";
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
    stderrIsTerminal: process.stderr.isTTY === true,
    // Asked only by `run` (making `process.stdin` is slow to load on Bun).
    get stdinIsTerminal(): boolean {
      return process.stdin.isTTY === true;
    },
    defer: (task) => void setImmediate(task),
    onShutdownSignal(handler) {
      process.on("SIGINT", handler);
      process.on("SIGTERM", handler);
      return () => {
        process.off("SIGINT", handler);
        process.off("SIGTERM", handler);
      };
    },
    onReloadSignal(handler) {
      process.on("SIGHUP", handler);
      return () => void process.off("SIGHUP", handler);
    },
  };
}
