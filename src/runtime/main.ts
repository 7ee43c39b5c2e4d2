/**
 * The runtime dispatch of the CLI: `mod.ts` imports this module when it runs as the main module,
 * and it imports the entry point of the runtime it runs on.
 *
 * Start-up loads only what serving needs before it can answer `initialize`; the rest is imported
 * on first use: the session side of a connection (`src/protocol/session_side.ts`, once the
 * `initialize` answer is written or with the first session message), the built-in tools (first
 * session), the host's file system and process supervision, the model providers, the MCP client,
 * the HTTP transport, the commands other than `serve`, re2js. `tests/startup_test.ts` guards it.
 *
 * Those lazy imports spell their specifier as a sum of two strings, for example
 * `import("./session_side" + ".ts")`. Before it runs anything, `deno run` builds the module graph
 * of the main module, and that graph follows every `import("literal")` too: Deno would read,
 * analyse and resolve (npm packages included) everything a lazy import leads to before the first
 * line runs, which cost more than a third of Deno's start-up over a bare agent. A sum is not a
 * literal, so the graph stops there; esbuild (`scripts/build.ts`) and `bun build` fold it into a
 * literal and bundle the module as before. A `typeof import` cast keeps the types. (An npm
 * package is imported by its name as a literal: `deno publish` rewrites only those to `npm:`
 * specifiers; Deno then resolves the package before start, but loads it only when it runs.)
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
