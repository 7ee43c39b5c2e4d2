/**
 * Finds the real Deno and Bun executables in a `node_modules` directory, whichever way it was
 * installed.
 *
 * The `deno` and `bun` npm packages are wrappers: their install scripts copy (Deno) or move (Bun)
 * the binary of a platform package (`@deno/linux-x64-glibc`, `@oven/bun-linux-x64`) into place.
 * When install scripts were skipped (`npm ci --ignore-scripts`, or Deno managing `node_modules`
 * with `"nodeModulesDir": "auto"`), `node_modules/.bin/bun` is a stub that only prints an error,
 * and `node_modules/.bin/deno` is a Node.js script. So the platform package is looked up first,
 * where npm puts it (`node_modules/@oven/bun-linux-x64/bin/bun`) and where Deno does
 * (`node_modules/.deno/@oven+bun-linux-x64@1.4.5/node_modules/@oven/bun-linux-x64/bin/bun`); then
 * the wrapper's own copy, then `node_modules/.bin`.
 *
 * @module
 */
import { readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";

/** Smaller than this, a file named like the binary is a wrapper script or a stub. */
const MIN_BINARY_BYTES = 1_000_000;

const isBinary = (path: string): boolean => {
  try {
    const info = statSync(path);
    return info.isFile() && info.size >= MIN_BINARY_BYTES;
  } catch {
    return false;
  }
};

/** The names of the Deno platform packages (under `@deno/`) for this machine, best first. */
export function denoPlatformPackages(
  platform: string = process.platform,
  arch: string = process.arch,
): string[] {
  return platform === "linux" ? [`${platform}-${arch}-glibc`] : [`${platform}-${arch}`];
}

/** The names of the Bun platform packages (under `@oven/`) for this machine, best first. */
export function bunPlatformPackages(
  platform: string = process.platform,
  arch: string = process.arch,
): string[] {
  const os = platform === "win32" ? "windows" : platform;
  const cpu = arch === "arm64" ? "aarch64" : arch;
  const base = `bun-${os}-${cpu}`;
  return [base, `${base}-baseline`, `${base}-musl`, `${base}-musl-baseline`];
}

/**
 * Where a package's file can be: npm's hoisted layout, then Deno's (`node_modules/.deno/<scope>+
 * <name>@<version>/node_modules/<scope>/<name>`, any version).
 */
function packageFileCandidates(modules: string, scope: string, name: string, file: string) {
  const candidates = [join(modules, scope, name, file)];
  const prefix = `${scope}+${name}@`;
  let entries: string[] = [];
  try {
    entries = readdirSync(join(modules, ".deno")).filter((entry) => entry.startsWith(prefix));
  } catch {
    // No Deno-managed layout.
  }
  for (const entry of entries.sort().reverse()) {
    candidates.push(join(modules, ".deno", entry, "node_modules", scope, name, file));
  }
  return candidates;
}

/**
 * The real Deno executable of a project's `node_modules`.
 *
 * @param root The project directory (the one holding `node_modules`)
 * @returns The first real binary found, else `node_modules/.bin/deno`
 */
export function findDeno(root: string): string {
  const modules = join(root, "node_modules");
  const exe = process.platform === "win32" ? "deno.exe" : "deno";
  const candidates = [
    ...denoPlatformPackages().flatMap((name) => packageFileCandidates(modules, "@deno", name, exe)),
    join(modules, "deno", exe),
  ];
  return candidates.find(isBinary) ?? join(modules, ".bin", "deno");
}

/**
 * The real Bun executable of a project's `node_modules`.
 *
 * @param root The project directory (the one holding `node_modules`)
 * @returns The first real binary found, else `node_modules/.bin/bun`
 */
export function findBun(root: string): string {
  const modules = join(root, "node_modules");
  const exe = process.platform === "win32" ? "bun.exe" : "bun";
  const candidates = [
    ...bunPlatformPackages().flatMap((name) =>
      packageFileCandidates(modules, "@oven", name, join("bin", exe))
    ),
    // Where Bun's install script moves the binary (named bun.exe on every platform).
    join(modules, "bun", "bin", "bun.exe"),
  ];
  return candidates.find(isBinary) ?? join(modules, ".bin", "bun");
}
