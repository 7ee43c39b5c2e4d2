/**
 * The JSR side of the package: the entry files deno.json exports are published, and the subpath
 * entries are smaller views of the package root.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { ROOT } from "../_helpers/runtimes.ts";

const config = JSON.parse(await readFile(`${ROOT}deno.json`, "utf8")) as {
  exports: Record<string, string>;
  publish: { include: string[] };
  tasks: Record<string, string>;
};

Deno.test("deno.json exports ., ./server and ./stdio, each a published file", () => {
  assert.deepEqual(Object.keys(config.exports), [".", "./server", "./stdio"]);
  for (const path of Object.values(config.exports)) {
    assert.ok(config.publish.include.includes(path.replace(/^\.\//, "")), path);
  }
});

Deno.test("./server exports the package root's values, nothing of its own", async () => {
  const root = await import("../../mod.ts") as Record<string, unknown>;
  const server = await import("../../server.ts") as Record<string, unknown>;
  assert.ok("createAgentServer" in server);
  for (const [name, value] of Object.entries(server)) {
    assert.equal(root[name], value, `mod.ts exports ${name} too`);
  }
});

Deno.test("./stdio exports the command line's main and starts nothing when imported", async () => {
  const stdio = await import("../../stdio.ts");
  assert.deepEqual(Object.keys(stdio), ["main"]);
  assert.equal(typeof stdio.main, "function");
});

Deno.test("tasks run the Deno that runs them, not a node_modules path", () => {
  for (const [name, task] of Object.entries(config.tasks)) {
    assert.doesNotMatch(task, /node_modules/, name);
  }
});
