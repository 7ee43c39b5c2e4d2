/**
 * The worktrees and checkpoints part of `bench/main.ts` (issue 34): what a session's own git
 * worktree costs `session/new`, and what a checkpoint costs a turn that writes a file, in a
 * repository of {@link WORKTREE_FILES} files. There is no bare agent to compare with (the SDK echo
 * agent has neither), so the anchors are git itself and ours with the feature off:
 *
 * - `session/new` with `_meta["acp-harness"].worktree: true` against `session/new` without it
 *   plus `git worktree add` of the same repository run by the bench (the least a session in a
 *   worktree of its own can cost);
 * - a turn that writes one file with checkpoints on (the default) against the same turn on a
 *   server started with `--checkpoints=off`; the first turn of a session (every file hashed into
 *   the shadow store) apart from the later ones (only changed files).
 *
 * Every figure is the median of interleaved rounds with its spread.
 *
 * @module
 */
import { fixed, ratioOf, ratioText, table } from "./format.ts";
import type { Results } from "./results.ts";
import type { AgentProcess } from "./agent_process.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import { median } from "./stats.ts";

/** Files in the benchmark's repository (1 KiB each, in 20 directories). */
export const WORKTREE_FILES = 1_000;

/** Median, min and max of some timings (ms). */
export interface Spread {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/** What the worktrees phase measured. */
export interface WorktreeResult {
  /** `session/new` without a worktree. */
  readonly plainNew: Spread;
  /** `session/new` with a worktree of its own. */
  readonly worktreeNew: Spread;
  /** `git worktree add` of the repository, run by the bench. */
  readonly gitAdd: Spread;
  /** A session's first turn that writes a file, checkpoints on. */
  readonly firstTurn: Spread;
  /** The same, checkpoints off. */
  readonly firstTurnOff: Spread;
  /** Later turns that write a file, checkpoints on. */
  readonly nextTurn: Spread;
  /** The same, checkpoints off. */
  readonly nextTurnOff: Spread;
  /** Rounds per figure. */
  readonly runs: number;
}

/** Starts ours with these extra flags on a data directory. */
export type StartWorktreeServer = (args: readonly string[], dataDir: string) => AgentProcess;

function spreadOf(values: readonly number[]): Spread {
  return { median: median([...values]), min: Math.min(...values), max: Math.max(...values) };
}

async function git(cwd: string, ...args: string[]): Promise<void> {
  const out = await new Deno.Command("git", {
    args,
    cwd,
    env: {
      GIT_CONFIG_NOSYSTEM: "1",
      GIT_CONFIG_GLOBAL: "/dev/null",
      GIT_AUTHOR_NAME: "bench",
      GIT_AUTHOR_EMAIL: "bench@example.invalid",
      GIT_COMMITTER_NAME: "bench",
      GIT_COMMITTER_EMAIL: "bench@example.invalid",
    },
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!out.success) {
    throw new Error(`git ${args[0]} failed: ${new TextDecoder().decode(out.stderr)}`);
  }
}

/** A repository of {@link WORKTREE_FILES} files, one commit. */
async function makeRepository(dir: string): Promise<void> {
  const line = "x".repeat(63) + "\n";
  for (let i = 0; i < WORKTREE_FILES; i++) {
    const sub = `${dir}/d${i % 20}`;
    if (i < 20) await Deno.mkdir(sub, { recursive: true });
    await Deno.writeTextFile(`${sub}/f${i}.txt`, `${i}\n${line.repeat(16)}`);
  }
  await git(dir, "init", "--quiet", "--initial-branch=main");
  await git(dir, "add", "-A");
  await git(dir, "commit", "--quiet", "-m", "bench");
}

/** The scripted model's steps: every turn writes one file, then ends. */
function turnScript(turns: number): unknown[] {
  return Array.from({ length: turns }, (_, i) => [
    {
      toolCalls: [{
        id: `w${i}`,
        name: "write_file",
        arguments: { path: `out/${i}.txt`, content: `turn ${i}\n` },
      }],
    },
    { text: "done" },
  ]).flat();
}

/**
 * Measures `session/new` with and without a worktree against `git worktree add`, then turns with
 * checkpoints on and off, each pair interleaved after warm-ups.
 *
 * @param start Starts ours with extra flags
 * @param tmp A directory for the repository and the data directories (removed after)
 * @param options Warm-ups and rounds
 * @returns The figures
 */
export async function measureWorktrees(
  start: StartWorktreeServer,
  tmp: string,
  options: { readonly warmups: number; readonly runs: number },
): Promise<WorktreeResult> {
  const root = await Deno.makeTempDir({ dir: tmp, prefix: "worktrees-" });
  try {
    const repo = `${root}/repo`;
    await makeRepository(repo);
    const total = options.warmups + options.runs;
    const script = `${root}/script.json`;
    await Deno.writeTextFile(script, JSON.stringify(turnScript(total + 1)));
    const flags = ["--model", "scripted", "--script", script, "--mode", "auto"];
    const on = start(flags, `${root}/data-on`);
    const off = start([...flags, "--checkpoints=off"], `${root}/data-off`);
    try {
      await on.request("initialize", INITIALIZE_PARAMS);
      await off.request("initialize", INITIALIZE_PARAMS);
      const news = await newSessions(on, repo, root, options);
      const turns = await turnsOnAndOff(on, off, repo, options);
      return { ...news, ...turns, runs: options.runs };
    } finally {
      on.closeStdin();
      off.closeStdin();
      await Promise.all([on.waitExit(), off.waitExit()]);
    }
  } finally {
    await Deno.remove(root, { recursive: true }).catch(() => {});
  }
}

async function newSessions(
  server: AgentProcess,
  repo: string,
  root: string,
  options: { readonly warmups: number; readonly runs: number },
): Promise<Pick<WorktreeResult, "plainNew" | "worktreeNew" | "gitAdd">> {
  const timedNew = async (meta: unknown): Promise<number> => {
    const sentAt = performance.now();
    const reply = await server.request("session/new", {
      cwd: repo,
      mcpServers: [],
      _meta: { "acp-harness": meta },
    });
    const elapsed = reply.at - sentAt;
    const sessionId = (reply.result as { sessionId: string }).sessionId;
    await server.request("session/delete", { sessionId });
    return elapsed;
  };
  let added = 0;
  const gitAdd = async (): Promise<number> => {
    const path = `${root}/plain-worktree-${added++}`;
    const startedAt = performance.now();
    await git(repo, "worktree", "add", "--quiet", "-b", `bench/${added}`, path, "HEAD");
    const elapsed = performance.now() - startedAt;
    await git(repo, "worktree", "remove", "--force", path);
    await git(repo, "branch", "-D", "--quiet", `bench/${added}`);
    return elapsed;
  };
  const rounds = { plain: [] as number[], worktree: [] as number[], git: [] as number[] };
  for (let i = 0; i < options.warmups + options.runs; i++) {
    const order = [
      async () => rounds.plain.push(await timedNew({ worktree: false })),
      async () => rounds.worktree.push(await timedNew({ worktree: true })),
      async () => rounds.git.push(await gitAdd()),
    ];
    for (const step of i % 2 === 0 ? order : order.reverse()) await step();
    if (i < options.warmups) { for (const list of Object.values(rounds)) list.length = 0; }
  }
  return {
    plainNew: spreadOf(rounds.plain),
    worktreeNew: spreadOf(rounds.worktree),
    gitAdd: spreadOf(rounds.git),
  };
}

async function turnsOnAndOff(
  on: AgentProcess,
  off: AgentProcess,
  repo: string,
  options: { readonly warmups: number; readonly runs: number },
): Promise<Omit<WorktreeResult, "plainNew" | "worktreeNew" | "gitAdd" | "runs">> {
  const prompt = async (server: AgentProcess, sessionId: string): Promise<number> => {
    const sentAt = performance.now();
    const reply = await server.request("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "write" }],
    });
    const stop = (reply.result as { stopReason?: string }).stopReason;
    if (stop !== "end_turn") throw new Error(`${server.label}: the turn ended ${stop}`);
    return reply.at - sentAt;
  };
  const open = async (server: AgentProcess): Promise<string> => {
    const reply = await server.request("session/new", { cwd: repo, mcpServers: [] });
    return (reply.result as { sessionId: string }).sessionId;
  };
  const first = { on: [] as number[], off: [] as number[] };
  const next = { on: [] as number[], off: [] as number[] };
  const sessionOn = await open(on);
  const sessionOff = await open(off);
  // Each round: a fresh session's first turn (every file hashed) and a later turn of one session.
  for (let i = 0; i < options.warmups + options.runs; i++) {
    const keep = i >= options.warmups;
    const pairs: Array<[AgentProcess, "on" | "off", string]> = [
      [on, "on", sessionOn],
      [off, "off", sessionOff],
    ];
    for (const [server, side, sessionId] of i % 2 === 0 ? pairs : pairs.reverse()) {
      const fresh = await open(server);
      const firstMs = await prompt(server, fresh);
      await server.request("session/delete", { sessionId: fresh });
      const nextMs = await prompt(server, sessionId);
      if (keep) {
        first[side].push(firstMs);
        next[side].push(nextMs);
      }
    }
  }
  return {
    firstTurn: spreadOf(first.on),
    firstTurnOff: spreadOf(first.off),
    nextTurn: spreadOf(next.on),
    nextTurnOff: spreadOf(next.off),
  };
}

const cell = (s: Spread | undefined): string =>
  s === undefined ? "–" : `${fixed(s.median, 1)} (${fixed(s.min, 1)} – ${fixed(s.max, 1)})`;

/**
 * The worktrees and checkpoints section of `bench/RESULTS.md`.
 *
 * @param run The results
 * @returns The section's Markdown
 */
export function renderWorktreeSection(run: Results): string {
  const news = run.runtimes.map(({ runtime, worktrees: w }) => [
    runtime,
    cell(w?.plainNew),
    cell(w?.worktreeNew),
    cell(w?.gitAdd),
    ratioText(ratioOf(w?.worktreeNew.median, w && w.plainNew.median + w.gitAdd.median)),
  ]);
  const turns = run.runtimes.map(({ runtime, worktrees: w }) => [
    runtime,
    cell(w?.firstTurn),
    cell(w?.firstTurnOff),
    ratioText(ratioOf(w?.firstTurn.median, w?.firstTurnOff.median)),
    cell(w?.nextTurn),
    cell(w?.nextTurnOff),
    ratioText(ratioOf(w?.nextTurn.median, w?.nextTurnOff.median)),
  ]);
  const runs = run.runtimes.find((r) => r.worktrees)?.worktrees?.runs;
  return [
    `## Worktrees and checkpoints in a repository of ${WORKTREE_FILES.toLocaleString("en-US")} ` +
    `files (ms, ${
      runs === undefined ? "not measured" : `median (min – max) of ${runs} interleaved rounds`
    }; no target)`,
    "",
    table(
      ["runtime", "session/new", "with a worktree", "git worktree add", "ratio to new + git"],
      news,
    ),
    "",
    table(
      [
        "runtime",
        "first turn",
        "checkpoints off",
        "ratio",
        "later turn",
        "checkpoints off",
        "ratio",
      ],
      turns,
    ),
    "",
    "Ours over stdio on the JSONL store, scripted model, `--mode auto`. A worktree session's " +
    '`session/new` (`_meta["acp-harness"].worktree: true`) finds the repository and runs ' +
    "`git worktree add` before it answers; its anchor is a plain `session/new` plus the bench " +
    "running `git worktree add` itself, so the ratio is the cost beyond git's own. Each session " +
    "is deleted again, untimed (the delete removes the worktree and its branch). A turn is one " +
    "`write_file` and an answer: with checkpoints on, the session records its files in its " +
    "shadow git store before the write (`git add` into a private index, `write-tree`); the " +
    "first turn of a session hashes every file, a later turn only what changed. There is no " +
    "bare agent to compare with (the SDK echo agent has neither feature), so no target.",
  ].join("\n");
}
