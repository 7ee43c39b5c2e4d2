/**
 * The JSR side of the package: the entry files deno.json exports are published, the npm package
 * exports the same subpaths from the same files, `./server` is a view of the package root and
 * `./stdio` and `./cli` export what they are for; deno.json's import map (what `deno install -g`
 * and JSR resolve the npm packages by) agrees with package.json; the root manifest, whose
 * packages `deno run -A mod.ts` installs, holds no development tool.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { ROOT } from "../_helpers/runtimes.ts";

import { PACKAGE_ENTRIES } from "../../scripts/build.ts";

/** The entries of the package, by subpath, in the order deno.json lists them. */
const ENTRIES: Readonly<Record<string, string>> = {
  ".": "./mod.ts",
  "./server": "./server.ts",
  "./llm": "./llm.ts",
  "./tools": "./tools.ts",
  "./store": "./store.ts",
  "./host": "./host.ts",
  "./stdio": "./stdio.ts",
  "./cli": "./cli.ts",
};

const config = JSON.parse(await readFile(`${ROOT}deno.json`, "utf8")) as {
  imports: Record<string, string>;
  exports: Record<string, string>;
  publish: { include: string[] };
  tasks: Record<string, string>;
};

Deno.test("deno.json exports the root and the subpath entries, each a published file", () => {
  assert.deepEqual(config.exports, ENTRIES);
  for (const path of Object.values(config.exports)) {
    assert.ok(config.publish.include.includes(path.replace(/^\.\//, "")), path);
  }
});

Deno.test("the npm package exports the same subpaths as JSR, each built from the same file", async () => {
  const npm = JSON.parse(await readFile(`${ROOT}package.json`, "utf8")) as {
    exports: Record<string, { types: string; import: string }>;
  };
  assert.deepEqual(Object.keys(npm.exports), Object.keys(ENTRIES));
  assert.deepEqual(Object.keys(PACKAGE_ENTRIES), Object.keys(ENTRIES));
  for (const [subpath, source] of Object.entries(ENTRIES)) {
    const entry = PACKAGE_ENTRIES[subpath];
    assert.equal(`./${entry?.source}`, source, subpath);
    assert.deepEqual(npm.exports[subpath], {
      types: `./dist/${entry?.output}.d.ts`,
      import: `./dist/${entry?.output}.js`,
    }, subpath);
  }
});

Deno.test("deno task ok lints the docs of every entry", () => {
  const files = Object.values(ENTRIES).map((path) => path.replace(/^\.\//, ""));
  assert.match(config.tasks["ok"] ?? "", new RegExp(`deno doc --lint ${files.join(" ")} `));
});

Deno.test("./server exports the package root's values, nothing of its own", async () => {
  const root = await import("../../mod.ts") as Record<string, unknown>;
  const server = await import("../../server.ts") as Record<string, unknown>;
  assert.ok("createAgentServer" in server);
  for (const [name, value] of Object.entries(server)) {
    assert.equal(root[name], value, `mod.ts exports ${name} too`);
  }
});

Deno.test("./stdio exports serveStdio, ./cli the command line's main; neither starts anything", async () => {
  const stdio = await import("../../stdio.ts");
  assert.deepEqual(Object.keys(stdio), ["serveStdio"]);
  assert.equal(typeof stdio.serveStdio, "function");
  const cli = await import("../../cli.ts");
  assert.deepEqual(Object.keys(cli), ["main"]);
  assert.equal(typeof cli.main, "function");
});

Deno.test("tasks run the Deno that runs them, not a node_modules path", () => {
  for (const [name, task] of Object.entries(config.tasks)) {
    assert.doesNotMatch(task, /node_modules/, name);
  }
});

const manifest = JSON.parse(await readFile(`${ROOT}package.json`, "utf8")) as {
  devDependencies: Record<string, string>;
  optionalDependencies: Record<string, string>;
};

/** The npm packages the sources import by bare name (`x`, `@scope/x`, and their subpaths). */
async function importedPackages(): Promise<Set<string>> {
  const files = Object.values(ENTRIES).map((path) => path.replace(/^\.\//, ""));
  for (const entry of await readdir(`${ROOT}src`, { recursive: true })) {
    if (entry.endsWith(".ts")) files.push(`src/${entry}`);
  }
  const names = new Set<string>();
  for (const file of files) {
    const text = await readFile(`${ROOT}${file}`, "utf8");
    const statics = text.matchAll(/^(?:import|export)\b[^;]*?\bfrom\s+"([^"]+)"/gm);
    // `import("x")` on a line of code (a comment line may mention `import("literal")`).
    const dynamics = text.matchAll(/^(?!\s*(?:\*|\/\/)).*\bimport\("([^"]+)"\)/gm);
    for (const [, specifier] of [...statics, ...dynamics]) {
      if (specifier === undefined || /^(?:\.|[a-z]+:)/.test(specifier)) continue;
      const parts = specifier.split("/");
      names.add(specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!);
    }
  }
  return names;
}

Deno.test("deno.json imports each npm package the sources import, at package.json's version", async () => {
  // `deno install -g` reads no package.json: without the import map it fails with `Import
  // "@agentclientprotocol/sdk" not a dependency`.
  const imported = await importedPackages();
  assert.ok(imported.has("@agentclientprotocol/sdk"), [...imported].join(", "));
  assert.deepEqual(Object.keys(config.imports).sort(), [...imported].sort());
  for (const [name, target] of Object.entries(config.imports)) {
    assert.equal(target, `npm:${name}@${manifest.devDependencies[name]}`, name);
  }
});

Deno.test("the root manifest holds no build tool, and Deno and Bun only as optional", () => {
  // Deno installs every dependency and devDependency of the root manifest on `deno run -A mod.ts`
  // (and skips optionalDependencies); the build tools are in scripts/tools/package.json.
  const tools = ["bun", "deno", "esbuild", "typescript", "dts-bundle-generator"];
  assert.deepEqual(
    Object.keys(manifest.devDependencies).filter((name) => tools.includes(name)),
    [],
  );
  assert.deepEqual(Object.keys(manifest.optionalDependencies).sort(), ["bun", "deno"]);
});
