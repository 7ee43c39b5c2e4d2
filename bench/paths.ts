/**
 * Where the bench keeps its files and which runtimes it runs: the paths under `.bench-tmp/`
 * that the phases share, and the Deno, Node.js and Bun executables.
 *
 * @module
 */
import { findBun, findDeno } from "../tests/_helpers/runtime_binaries.ts";

/** The repository's root. */
export const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** The bench's scratch directory. */
export const TMP = `${ROOT}/.bench-tmp`;
/** The bare agent bundled for Node.js. */
export const BARE_BUNDLE = `${TMP}/bare_agent.js`;
/** The compiled binaries of ours and of the bare agent (`scripts/compile.ts`), built by `prepare`. */
export const OURS_BINARY = `${TMP}/bin/acp-harness`;
export const BARE_BINARY = `${TMP}/bin/bare-agent`;
/** The scripted model's steps of the throughput phase. */
export const STREAM_SCRIPT = `${TMP}/stream_script.json`;
/** The ready-made NDJSON file of the client's ceiling. */
export const CEILING_FILE = `${TMP}/ceiling.ndjson`;
/** The config file of the LLM-turn agents (rewritten per runtime: the fake server's port). */
export const LLM_CONFIG_FILE = `${TMP}/llm_config.json`;
/**
 * `ACP_HARNESS_HOME` (the data directory, where sessions are stored) of our agents, so nothing
 * lands in the real `~/.acp-harness`; emptied before each run. The LLM-turn agents get their own,
 * emptied per runtime.
 */
export const AGENT_HOME = `${TMP}/home`;
export const LLM_HOME = `${TMP}/llm_home`;
/** Fresh data directories of ours, one per run that needs one (each removed after its run). */
export const FRESH_HOMES = `${TMP}/fresh`;
/** The generated data directories of the durable-session benchmarks (removed at the end). */
export const STORE_DIR = `${TMP}/store`;
/** The report. */
export const RESULTS_FILE = `${ROOT}/bench/RESULTS.md`;
/** The Deno executable. */
export const DENO: string = findDeno(ROOT);
/** The Bun executable. */
export const BUN: string = findBun(ROOT);
/**
 * Node.js by absolute path. When `node` is not on PATH, Deno puts a `node` link to itself on the
 * PATH it gives this process (and `node:child_process` runs Deno for a bare `node`), which would
 * silently benchmark Deno twice; such links are skipped.
 */
export const NODE: string | undefined = await findOnPath(
  "node",
  await Deno.realPath(Deno.execPath()),
);

/** The first executable `name` on PATH that is not (a link to) `exclude`. */
async function findOnPath(name: string, exclude: string): Promise<string | undefined> {
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir === "") continue;
    const candidate = `${dir}/${name}`;
    try {
      const info = await Deno.stat(candidate);
      const executable = info.isFile && ((info.mode ?? 0) & 0o111) !== 0;
      if (executable && await Deno.realPath(candidate) !== exclude) return candidate;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}
