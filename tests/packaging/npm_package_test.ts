/**
 * The npm package as its users get it: packed with `npm pack` (whose `prepack` runs the build),
 * installed from the tarball into an empty project with no network, then run as `npx`, as the
 * installed bin on Node.js and through `bun x`, and imported as a library on Node.js and Bun, by
 * every subpath JSR has too (`acp-harness/llm`, …).
 *
 * The build runs in a staging copy of the sources, not in the checkout: it rebuilds `dist/`, which
 * other tests run meanwhile.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { cp, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import * as library from "../../mod.ts";
import { PACKAGE_ENTRIES } from "../../scripts/build.ts";
import { VERSION } from "../../src/util/version.ts";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { ROOT, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const BUN = RUNTIMES.find((runtime) => runtime.name === "bun")?.command ?? "bun";
const TSC = `${ROOT}scripts/tools/node_modules/typescript/bin/tsc`;
/** What `npm pack` and the package build read, copied into the staging directory. */
const SOURCES = [
  "package.json",
  "deno.json",
  ...Object.values(PACKAGE_ENTRIES).map((entry) => entry.source),
  "src",
  "scripts",
  "README.md",
  "LICENSE",
];
/** The only files the tarball may hold outside `dist/`. */
const TOP_LEVEL = ["LICENSE", "README.md", "package.json"];

/** The outcome of a finished command. */
interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to its end in its own process group, killing the group after `timeoutMs` (npm
 * runs the build as a grandchild). With `holdStdin`, its standard input is a pipe left open (a
 * program that reads it would never end).
 */
function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string>; timeoutMs: number; holdStdin?: boolean },
): Promise<Run> {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: [options.holdStdin === true ? "pipe" : "ignore", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.setEncoding("utf8");
  child.stderr?.setEncoding("utf8");
  child.stdout?.on("data", (text: string) => stdout += text);
  child.stderr?.on("data", (text: string) => stderr += text);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      try {
        process.kill(-(child.pid as number), "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
      reject(
        new Error(`${command} ${args.join(" ")} ran over ${options.timeoutMs} ms:\n${stderr}`),
      );
    }, options.timeoutMs);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Like {@link run}, failing unless the command exits 0. */
async function runOk(...args: Parameters<typeof run>): Promise<Run> {
  const result = await run(...args);
  assert.equal(result.code, 0, `${args[0]} ${args[1].join(" ")} failed:\n${result.stderr}`);
  return result;
}

/**
 * The environment of the commands: this process's, less the `npm_*` variables that `npx deno
 * task test` sets (`npm_config_local_prefix` would send `npm pack` to the checkout), with a
 * private npm cache and temp directory (nothing left in the user's cache or in /tmp: `bun x --bun`
 * makes a directory there) and npm's network side-trips off.
 */
function commandEnv(cache: string, tmp: string): Record<string, string> {
  const env = Object.fromEntries(
    Object.entries(Deno.env.toObject()).filter(([name]) => !/^npm_/i.test(name)),
  );
  return {
    ...env,
    TMPDIR: tmp,
    npm_config_cache: cache,
    npm_config_update_notifier: "false",
    npm_config_audit: "false",
    npm_config_fund: "false",
  };
}

/** The directories `bun x --bun` makes in /tmp. */
async function bunNodeDirs(): Promise<string[]> {
  return (await readdir("/tmp")).filter((name) => name.startsWith("bun-node-"));
}

/** Starts the installed server with `command args`, answers `initialize`, closes stdin. */
async function initializeThrough(
  command: string,
  args: readonly string[],
  cwd: string,
  env: Record<string, string>,
): Promise<void> {
  const agent = spawnAgent(command, args, {
    cwd,
    env: { ...env, ACP_HARNESS_HOME: join(cwd, "acp-home") },
  });
  try {
    const init = await agent.client.initialize();
    assert.deepEqual(init.agentInfo, {
      name: "acp-harness",
      title: "acp-harness",
      version: VERSION,
    });
    agent.end();
    assert.equal(await exitWithin(agent, 10_000), 0);
    assert.deepEqual(agent.impure, [], "stdout carries protocol frames only");
    assert.deepEqual(agent.client.problems, []);
  } finally {
    agent.child.kill("SIGKILL");
  }
}

/** The package's import specifiers by subpath: `acp-harness`, `acp-harness/llm`, … */
const SPECIFIERS: Readonly<Record<string, string>> = Object.fromEntries(
  Object.keys(PACKAGE_ENTRIES).map((subpath) => [subpath, `acp-harness${subpath.slice(1)}`]),
);

/**
 * A consumer of the library: serves `initialize` in-process and prints what it saw, the names
 * each subpath exports included.
 */
const CONSUMER_MJS = `import * as harness from "acp-harness";
import { createAgentServer, createMemoryPair, NodeHost, VERSION } from "acp-harness";
const subpaths = {};
for (const [subpath, specifier] of Object.entries(${JSON.stringify(SPECIFIERS)})) {
  subpaths[subpath] = Object.keys(await import(specifier)).sort();
}
const server = createAgentServer({ host: new NodeHost() });
const [serverSide, clientSide] = createMemoryPair();
const connection = server.connect(serverSide);
const writer = clientSide.writable.getWriter();
const reader = clientSide.readable.getReader();
await writer.write({
  jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: 1, clientCapabilities: {} },
});
const { value } = await reader.read();
await writer.close();
await connection.closed;
await server.close();
console.log(JSON.stringify({
  version: VERSION, exports: Object.keys(harness).sort(), subpaths, answer: value,
}));
`;

/**
 * The same use from TypeScript, type-checked against the package's declarations; the parts come
 * from the subpaths (a class from one is the same type in another), the server from the root.
 */
const CONSUMER_TS = `import {
  type AgentServer, createAgentServer, createMemoryPair, nullLogger, VERSION,
} from "acp-harness";
import { main } from "acp-harness/cli";
import { type Host, NodeHost } from "acp-harness/host";
import { type LlmProvider, ModelCatalog, parseScript, ScriptedProvider } from "acp-harness/llm";
import { serveStdio } from "acp-harness/stdio";
import { MemorySessionStore, type SessionStore } from "acp-harness/store";
import { builtinTools, type Tool } from "acp-harness/tools";
const store = new MemorySessionStore();
const sessions: SessionStore = store;
const host: Host = new NodeHost();
const server: AgentServer = createAgentServer({
  catalog: new ModelCatalog(), host, logger: nullLogger,
  version: VERSION, store: sessions, attachments: store.attachments,
});
const [serverSide] = createMemoryPair();
export const closed: Promise<void> = server.connect(serverSide).closed;
export const tools: readonly Tool[] = builtinTools();
export const provider: LlmProvider = new ScriptedProvider(parseScript([{ text: "hi" }]));
export const serve: (options: { server: AgentServer }) => Promise<void> = serveStdio;
export const run: () => Promise<void> = main;
export const version: string = VERSION;
`;

/** No @types/node: the declarations must stand alone with the DOM lib's streams. */
const CONSUMER_TSCONFIG = {
  compilerOptions: {
    target: "ES2022",
    module: "NodeNext",
    moduleResolution: "NodeNext",
    lib: ["ES2023", "DOM"],
    types: [],
    strict: true,
    noEmit: true,
  },
  files: ["consumer.ts"],
};

Deno.test("npm package: packs, installs offline, runs on Node.js and Bun, imports as a library", async (t) => {
  await using dirs = new TempDirs("acp-harness-npm-");
  const [stage, packs, project, cache, tmp] = await Promise.all([
    dirs.make(),
    dirs.make(),
    dirs.make(),
    dirs.make(),
    dirs.make(),
  ]);
  const env = commandEnv(cache, tmp);

  // The installed packages are linked, not copied: the root's and the build tools' (scripts/tools/).
  const isInstall = (path: string): boolean => /\/node_modules$/.test(path);
  await Promise.all(
    SOURCES.map((name) =>
      cp(join(ROOT, name), join(stage, name), {
        recursive: true,
        filter: (from) => !isInstall(from),
      })
    ),
  );
  await symlink(join(ROOT, "node_modules"), join(stage, "node_modules"), "dir");
  await symlink(
    join(ROOT, "scripts/tools/node_modules"),
    join(stage, "scripts/tools/node_modules"),
    "dir",
  );
  await runOk("npm", ["pack", "--pack-destination", packs], {
    cwd: stage,
    env,
    timeoutMs: 180_000,
  });
  const tarball = join(packs, `acp-harness-${VERSION}.tgz`);

  await t.step("the tarball holds the bundles and their declarations, no sources", async () => {
    const listing = await runOk("tar", ["-tzf", tarball], { cwd: packs, env, timeoutMs: 10_000 });
    const files = listing.stdout.trim().split("\n").map((entry) => entry.replace(/^package\//, ""));
    const entries = Object.values(PACKAGE_ENTRIES).flatMap(({ output }) => [
      `dist/${output}.js`,
      `dist/${output}.d.ts`,
    ]);
    for (const needed of ["dist/cli.js", "dist/_declarations.d.ts", ...entries, ...TOP_LEVEL]) {
      assert.ok(files.includes(needed), `${needed} is in the tarball`);
    }
    const stray = files.filter((file) => !file.startsWith("dist/") && !TOP_LEVEL.includes(file));
    assert.deepEqual(stray, [], "only dist/ and the top-level files");
    for (const dir of ["tests/", "bench/", "scripts/", "src/"]) {
      assert.ok(!files.some((file) => file.includes(dir)), `nothing from ${dir}`);
    }
  });

  await writeFile(
    join(project, "package.json"),
    JSON.stringify({ name: "consumer", private: true, type: "module" }),
  );
  // --offline: the package has no dependencies, so the tarball is all there is to install.
  const installed = await runOk("npm", ["install", "--offline", tarball], {
    cwd: project,
    env,
    timeoutMs: 60_000,
  });

  await t.step("installing the tarball runs and flags no script of the package", async () => {
    const manifest = JSON.parse(
      await readFile(join(project, "node_modules/acp-harness/package.json"), "utf8"),
    ) as { scripts?: Record<string, string> } & Record<string, unknown>;
    const runOnInstall = ["preinstall", "install", "postinstall", "prepare"];
    assert.deepEqual(
      Object.keys(manifest.scripts ?? {}).filter((name) => runOnInstall.includes(name)),
      [],
    );
    // The bundles hold what they need: a user gets no package (not the clone's Deno and Bun).
    for (const kind of ["dependencies", "optionalDependencies", "peerDependencies"]) {
      assert.equal(manifest[kind], undefined, kind);
    }
    assert.doesNotMatch(installed.stdout + installed.stderr, /scripts\/build\.ts|install-scripts/);
  });
  const bin = join(project, "node_modules/.bin/acp-harness");

  await t.step("npx acp-harness --version prints the version", async () => {
    const result = await runOk("npx", ["--offline", "acp-harness", "--version"], {
      cwd: project,
      env,
      timeoutMs: 30_000,
    });
    assert.equal(result.stdout, `${VERSION}\n`);
  });

  await t.step("the installed bin answers initialize over stdio on Node.js", async () => {
    await initializeThrough(bin, [], project, env);
  });

  await t.step(
    "bun x acp-harness answers initialize (Node.js by its shebang, and --bun)",
    async () => {
      await initializeThrough(BUN, ["x", "acp-harness"], project, env);
      // With --bun, Bun puts a `node` link to itself in /tmp/bun-node-<revision> (not under
      // TMPDIR): remove it if this run made it.
      const before = new Set(await bunNodeDirs());
      try {
        await initializeThrough(BUN, ["x", "--bun", "acp-harness"], project, env);
      } finally {
        const made = (await bunNodeDirs()).filter((name) => !before.has(name));
        await Promise.all(
          made.map((name) => rm(join("/tmp", name), { recursive: true, force: true })),
        );
      }
    },
  );

  await writeFile(join(project, "consumer.mjs"), CONSUMER_MJS);
  for (const [runtime, command] of [["Node.js", "node"], ["Bun", BUN]] as const) {
    await t.step(`import from "acp-harness" on ${runtime} (and no CLI starts)`, async () => {
      // Standard input stays open: had importing started the CLI, it would serve it and not end.
      const result = await runOk(command, ["consumer.mjs"], {
        cwd: project,
        env,
        timeoutMs: 30_000,
        holdStdin: true,
      });
      const seen = JSON.parse(result.stdout) as {
        version: string;
        exports: string[];
        subpaths: Record<string, string[]>;
        answer: { id: number; result: { agentInfo: unknown } };
      };
      assert.equal(seen.version, VERSION);
      assert.deepEqual(seen.exports, Object.keys(library).sort(), "the exports of mod.ts");
      for (const [subpath, { source }] of Object.entries(PACKAGE_ENTRIES)) {
        const entry = await import(`../../${source}`) as Record<string, unknown>;
        assert.deepEqual(
          seen.subpaths[subpath],
          Object.keys(entry).sort(),
          `the exports of ${source}`,
        );
      }
      assert.equal(seen.answer.id, 1);
      assert.deepEqual(seen.answer.result.agentInfo, {
        name: "acp-harness",
        title: "acp-harness",
        version: VERSION,
      });
    });
  }

  await t.step("the declarations type-check in a TypeScript consumer", async () => {
    await writeFile(join(project, "consumer.ts"), CONSUMER_TS);
    await writeFile(join(project, "tsconfig.json"), JSON.stringify(CONSUMER_TSCONFIG));
    const result = await run("node", [TSC, "-p", "tsconfig.json"], {
      cwd: project,
      env,
      timeoutMs: 60_000,
    });
    assert.equal(result.code, 0, `tsc found errors:\n${result.stdout}${result.stderr}`);
  });
});
