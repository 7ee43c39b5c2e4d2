/**
 * The command-line program of acp-harness: {@link main} runs it with the process's arguments on
 * whichever runtime runs it (Deno, Node.js or Bun): ACP on stdio (what an ACP client spawns),
 * `serve --http`, `models`, `copy-sessions`, `--help`. It exits the process when it is done.
 *
 * ```sh
 * deno run -A jsr:@acp-harness/server/cli --help
 * ```
 *
 * Importing this module starts nothing; run as the main module, it runs the program.
 *
 * @example Running the program from a script of your own
 * ```ts ignore
 * import { main } from "@acp-harness/server/cli";
 * await main(); // serves ACP on stdio until the client hangs up, then exits
 * ```
 *
 * @module
 */
import { main } from "./src/runtime/main.ts";

export { main };

if (import.meta.main) await main();
