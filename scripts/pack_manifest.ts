/**
 * The package manifest as packed: without the `prepare` script and without `optionalDependencies`.
 * `prepare` builds `dist/` after `npm install` in a clone (the quick start relies on it), but in
 * the packed manifest it does nothing (npm never runs it for a tarball) except that every install
 * of the tarball flags it as an unapproved script. `optionalDependencies` are the Deno and Bun
 * runtimes a clone's `npm install` brings (there so that Deno's own install, which skips them,
 * stays small); a user of the package, which bundles what it needs, must not get them. npm runs
 * `prepack` (`strip`) before it reads the manifest it packs and `postpack` (`restore`) after:
 *
 *   deno run -A scripts/pack_manifest.ts strip     package.json without `prepare` and
 *                                                  `optionalDependencies`, the original kept as
 *                                                  package.json.orig
 *   deno run -A scripts/pack_manifest.ts restore   package.json.orig back in place
 *
 * A `strip` after a pack that failed midway restores the original first.
 *
 * @module
 */
import { readFile, rename, stat, writeFile } from "node:fs/promises";

const root = new URL("..", import.meta.url).pathname;
const manifest = `${root}package.json`;
const original = `${root}package.json.orig`;

async function exists(path: string): Promise<boolean> {
  return await stat(path).then(() => true, () => false);
}

if (import.meta.main) {
  const [action] = Deno.args;
  if (action === "strip") {
    if (await exists(original)) await rename(original, manifest);
    const text = await readFile(manifest, "utf8");
    const json = JSON.parse(text) as {
      scripts?: Record<string, string>;
      optionalDependencies?: Record<string, string>;
    };
    await writeFile(original, text);
    if (json.scripts) delete json.scripts["prepare"];
    delete json.optionalDependencies;
    await writeFile(manifest, `${JSON.stringify(json, null, 2)}\n`);
  } else if (action === "restore") {
    if (await exists(original)) await rename(original, manifest);
  } else {
    throw new TypeError(
      `Cannot run pack_manifest: expected "strip" or "restore", got ${action}`,
    );
  }
}
