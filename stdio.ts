/**
 * The stdio entry of acp-harness: the command-line program, which serves ACP over stdin and
 * stdout on whichever runtime runs it (Deno, Node.js or Bun). Run it as a program:
 *
 * ```sh
 * deno run -A jsr:@acp-harness/server/stdio --help
 * ```
 *
 * Importing this module starts nothing; {@link main} runs the program with the process's
 * arguments and exits the process when the client hangs up.
 *
 * @module
 */
import { main } from "./src/runtime/main.ts";

export { main };

if (import.meta.main) await main();
