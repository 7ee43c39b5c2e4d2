// deno-lint-ignore-file no-console
/**
 * Builds `dist/bin/acp-harness`: one self-contained executable of the server, made with
 * `bun build --compile` from `mod.ts` (the Bun runtime and every dependency inside; it needs no
 * `node_modules`, no Deno, Bun or Node.js installed where it runs).
 *
 * ```sh
 * deno run -A scripts/compile.ts [--outfile <path>] [--deno]
 * ```
 *
 * `--deno` also tries `deno compile` (to `<outfile>-deno`). That downloads the `denort` runtime
 * from dl.deno.land on first use; where that host is unreachable it prints one line saying so and
 * goes on (set `DENORT_BIN` to a local `denort` binary to compile offline). The exit code is the
 * Bun build's.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { mkdir, readdir, stat } from "node:fs/promises";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root, with no trailing slash. */
const ROOT = fileURLToPath(new URL("..", import.meta.url)).replace(/\/$/, "");

/** What a compile produced. */
export interface CompiledBinary {
  /** The executable's absolute path. */
  readonly path: string;
  /** Its size in bytes. */
  readonly bytes: number;
  /** How long the build took (ms). */
  readonly ms: number;
}

/** Options of {@link compileBinary}. */
export interface CompileOptions {
  /** Where the executable goes (its directory is created). */
  readonly outfile: string;
  /**
   * The module to compile, relative to the repository root.
   *
   * @default "mod.ts"
   */
  readonly entry?: string;
  /**
   * The Bun executable that builds it.
   *
   * @default the first working one {@link findBun} finds
   */
  readonly bun?: string;
}

/**
 * The `bun build` arguments of the binary. Minified and with bytecode compiled ahead (it starts
 * about twice as fast as plain `--compile`); the compiled program reads no `.env` or `bunfig.toml`
 * from the directory it runs in (a standalone Bun executable does unless told not to), so it sees
 * the same environment as `node dist/cli.js`.
 *
 * @param entry The module to compile
 * @param outfile The executable to write
 * @returns The arguments after `bun`
 */
export function bunCompileArgs(entry: string, outfile: string): string[] {
  return [
    "build",
    entry,
    "--compile",
    "--minify",
    "--bytecode",
    "--format=esm",
    "--no-compile-autoload-dotenv",
    "--no-compile-autoload-bunfig",
    "--outfile",
    outfile,
  ];
}

/**
 * Finds a Bun executable that runs: the platform package under `node_modules` (npm's layout or
 * Deno's `node_modules/.deno/`), then `node_modules/.bin/bun` (a stub when npm skipped bun's
 * install script), then `bun` on PATH.
 *
 * @param root The repository root
 * @returns The path (or command name) of a working Bun
 * @throws Error when none of them answers `--version`
 */
export async function findBun(root: string = ROOT): Promise<string> {
  // Platform packages: bun-<os>-<arch>[-musl|-baseline], e.g. bun-linux-x64, bun-darwin-aarch64.
  const platform = `bun-${Deno.build.os}-${Deno.build.arch === "aarch64" ? "aarch64" : "x64"}`;
  const exe = Deno.build.os === "windows" ? "bun.exe" : "bun";
  const candidates: string[] = [];
  const packages = async (dir: string, prefix: string): Promise<string[]> => {
    try {
      return (await readdir(dir)).filter((name) => name.startsWith(prefix))
        // glibc before musl and baseline builds: the plain build first.
        .sort((a, b) => a.length - b.length || a.localeCompare(b));
    } catch {
      return [];
    }
  };
  for (const name of await packages(join(root, "node_modules/@oven"), platform)) {
    candidates.push(join(root, "node_modules/@oven", name, "bin", exe));
  }
  for (const name of await packages(join(root, "node_modules/.deno"), `@oven+${platform}`)) {
    const pkg = name.replace(/^@oven\+/, "").replace(/@[^@]*$/, "");
    candidates.push(join(root, "node_modules/.deno", name, "node_modules/@oven", pkg, "bin", exe));
  }
  candidates.push(join(root, "node_modules/.bin", exe), "bun");
  for (const candidate of candidates) {
    if (candidate.includes("/") && !existsSync(candidate)) continue;
    const version = await run(candidate, ["--version"]).catch(() => undefined);
    if (version?.code === 0 && /^\d+\.\d+\.\d+/.test(version.stdout)) return candidate;
  }
  throw new Error(`no working Bun found (tried ${candidates.join(", ")})`);
}

/**
 * Compiles the server (or `entry`) into one executable with `bun build --compile`.
 *
 * @param options Where it goes, and optionally the entry module and the Bun to use
 * @returns The executable, its size and the build time
 * @throws Error with Bun's output when the build fails
 */
export async function compileBinary(options: CompileOptions): Promise<CompiledBinary> {
  const started = performance.now();
  const bun = options.bun ?? await findBun(ROOT);
  const outfile = resolve(options.outfile);
  await mkdir(dirname(outfile), { recursive: true });
  const result = await run(bun, bunCompileArgs(options.entry ?? "mod.ts", outfile));
  if (result.code !== 0) {
    throw new Error(`bun build --compile failed (exit ${result.code}):\n${result.output}`);
  }
  return { path: outfile, bytes: (await stat(outfile)).size, ms: performance.now() - started };
}

/** What {@link compileWithDeno} did. */
export type DenoCompileOutcome =
  | { readonly ok: true; readonly binary: CompiledBinary }
  | { readonly ok: false; readonly unreachable: boolean; readonly reason: string };

/**
 * Tries `deno compile` of `mod.ts` with the running Deno.
 *
 * @param outfile The executable to write
 * @returns The binary, or why there is none (`unreachable`: the denort download failed)
 */
export async function compileWithDeno(outfile: string): Promise<DenoCompileOutcome> {
  const started = performance.now();
  const path = resolve(outfile);
  await mkdir(dirname(path), { recursive: true });
  const result = await run(Deno.execPath(), [
    "compile",
    "-A",
    "--no-check",
    "--quiet",
    "--output",
    path,
    "mod.ts",
  ]);
  if (result.code === 0) {
    return {
      ok: true,
      binary: { path, bytes: (await stat(path)).size, ms: performance.now() - started },
    };
  }
  const url = /https:\/\/dl\.deno\.land\/\S*denort\S*\.zip/.exec(result.output)?.[0];
  const unreachable = url !== undefined &&
    /error sending request|dns error|Connect|timed out/i.test(result.output);
  return {
    ok: false,
    unreachable,
    reason: unreachable
      ? `it downloads the denort runtime (${url}), which is unreachable from here; ` +
        "set DENORT_BIN to a local denort binary to compile offline"
      : result.output.trim().split("\n").slice(-5).join("\n"),
  };
}

/** Runs a command in the repository root; resolves with its exit code, stdout and all output. */
async function run(
  command: string,
  args: readonly string[],
): Promise<{ code: number; stdout: string; output: string }> {
  const { code, stdout, stderr } = await new Deno.Command(command, {
    args: [...args],
    cwd: ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    env: { NO_COLOR: "1" },
  }).output();
  const decoder = new TextDecoder();
  const out = decoder.decode(stdout);
  return { code, stdout: out, output: out + decoder.decode(stderr) };
}

function mib(bytes: number): string {
  return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
}

async function main(args: readonly string[]): Promise<number> {
  let outfile = join(ROOT, "dist/bin/acp-harness");
  let deno = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    if (arg === "--deno") deno = true;
    else if (arg === "--outfile" && args[i + 1] !== undefined) outfile = resolve(args[++i] ?? "");
    else {
      console.error("usage: deno run -A scripts/compile.ts [--outfile <path>] [--deno]");
      return 2;
    }
  }
  try {
    const binary = await compileBinary({ outfile });
    console.log(
      `bun build --compile: ${binary.path} (${mib(binary.bytes)}, ${
        (binary.ms / 1000).toFixed(1)
      } s)`,
    );
  } catch (error) {
    console.error(error instanceof Error ? error.message : String(error));
    return 1;
  }
  if (deno) {
    const outcome = await compileWithDeno(`${outfile}-deno`);
    if (outcome.ok) {
      console.log(`deno compile: ${outcome.binary.path} (${mib(outcome.binary.bytes)})`);
    } else if (outcome.unreachable) {
      console.log(`deno compile: skipped: ${outcome.reason}`);
    } else {
      console.error(`deno compile failed:\n${outcome.reason}`);
      return 1;
    }
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
