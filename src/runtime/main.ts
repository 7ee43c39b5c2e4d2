/**
 * The runtime dispatch of the CLI: `mod.ts` imports this module when it runs as the main module,
 * and it imports the entry point of the runtime it runs on.
 *
 * Start-up loads only what serving needs before it can answer `initialize`; the rest is imported
 * on first use: the session side of a connection (once the `initialize` answer is written or with
 * the first session message), the built-in tools (first session), the host's file system and
 * process supervision, the model providers, the MCP client, the HTTP transport, the commands other
 * than `serve`, re2js. `tests/startup_test.ts` guards it.
 *
 * How those lazy imports stay out of the module graph `deno run` builds before it starts, while
 * the bundlers still find them, is explained once, in `src/util/lazy_import.ts`.
 *
 * @module
 */
import { routeConsoleToStderr } from "./route_console.ts";

/**
 * Starts the CLI on whichever runtime is running it.
 *
 * @returns Never returns normally: the runtime entry exits the process
 */
export async function main(): Promise<void> {
  routeConsoleToStderr();
  const runtime = globalThis as { Deno?: unknown; Bun?: unknown };
  if (runtime.Deno !== undefined) return (await import("./deno.ts")).main();
  if (runtime.Bun !== undefined) return (await import("./bun.ts")).main();
  return (await import("./node.ts")).main();
}
