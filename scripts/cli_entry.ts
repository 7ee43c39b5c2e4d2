/**
 * The entry point that `scripts/build.ts` bundles into `dist/cli.js`, as `src/runtime/main.ts` is
 * for `mod.ts`: the console's stdout methods go to stderr (the stdout is for protocol frames), and
 * each runtime gets its own entry. The Node.js one is bundled with start-up; the Deno and Bun ones
 * are loaded on demand, so `deno run -A dist/cli.js` and `bun dist/cli.js` (also `bunx --bun`)
 * serve as `mod.ts` does on them.
 *
 * @module
 */
import { main as nodeMain } from "../src/runtime/node.ts";
import { routeConsoleToStderr } from "../src/runtime/route_console.ts";

routeConsoleToStderr();
const runtime = globalThis as { Deno?: unknown; Bun?: unknown };
if (runtime.Deno !== undefined) await (await import("../src/runtime/deno.ts")).main();
else if (runtime.Bun !== undefined) await (await import("../src/runtime/bun.ts")).main();
else await nodeMain();
