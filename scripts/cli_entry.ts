/**
 * The Node.js entry point that `scripts/build.ts` bundles into `dist/cli.js`.
 *
 * @module
 */
import { main } from "../src/runtime/node.ts";

await main();
