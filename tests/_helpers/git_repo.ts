/**
 * Real git repositories for tests: made with the `git` program, with a fixed identity and no
 * user or system config, so that a test sees what it set up and nothing of the machine's.
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

/** The environment every test git call gets: a fixed identity, no user or system config. */
export const GIT_ENV: Readonly<Record<string, string>> = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "Test",
  GIT_AUTHOR_EMAIL: "test@example.invalid",
  GIT_COMMITTER_NAME: "Test",
  GIT_COMMITTER_EMAIL: "test@example.invalid",
  LC_ALL: "C",
};

/**
 * Runs git in `cwd` and returns what it printed (throws on a non-zero exit).
 *
 * @param cwd Where
 * @param args The arguments after `git`
 * @returns Its standard output
 */
export function gitIn(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, {
    cwd,
    env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", ...GIT_ENV },
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/**
 * Makes `dir` a repository on branch `main` with `files` committed (paths relative to it).
 *
 * @param dir An empty directory
 * @param files What the first commit holds
 * @returns The first commit's id
 */
export function makeRepo(dir: string, files: Record<string, string> = { "a.txt": "a\n" }): string {
  gitIn(dir, "init", "--quiet", "--initial-branch=main");
  writeFiles(dir, files);
  gitIn(dir, "add", "-A");
  gitIn(dir, "commit", "--quiet", "-m", "first");
  return gitIn(dir, "rev-parse", "HEAD").trim();
}

/**
 * Writes files under `dir`, making their directories.
 *
 * @param dir The root
 * @param files Their paths (relative) and contents
 */
export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(`${dir}/${path}`), { recursive: true });
    writeFileSync(`${dir}/${path}`, content);
  }
}

/**
 * The repository's `git status --porcelain` (empty when the checkout is clean).
 *
 * @param dir The checkout
 * @returns Its status lines
 */
export function statusOf(dir: string): string {
  return gitIn(dir, "status", "--porcelain", "--untracked-files=all");
}

/**
 * The repository's local branches.
 *
 * @param dir The checkout
 * @returns Their names, sorted
 */
export function branchesOf(dir: string): string[] {
  return gitIn(dir, "for-each-ref", "--format=%(refname:short)", "refs/heads").split("\n")
    .filter((line) => line !== "").sort();
}
