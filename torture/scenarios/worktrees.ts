/**
 * Hostile repositories under `--worktrees`: each round's repository plants everything that would
 * make the server's git run code (hooks, a file-system monitor, filter drivers in its config and in
 * a file its config includes, an external diff), holds a symlink to a secret outside and files with
 * odd names, and then a session works in a worktree of it (from `HEAD` or from its working tree):
 * a write, a command that edits, creates and deletes files, `/undo`, `session/delete`. Counted:
 * any planted program that ran (an escape), a change outside the worktree (the checkout, its
 * index, the secret), an `/undo` that does not bring the files back, and a worktree, record or
 * branch left after the delete.
 *
 * @module
 */
import { execFileSync } from "node:child_process";
import { chmod, mkdir, readdir, readFile, symlink, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { random, type Server, writeScript } from "../driver.ts";

const GIT_ENV = {
  PATH: process.env.PATH ?? "/usr/bin:/bin",
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@t.invalid",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@t.invalid",
};

function gitIn(cwd: string, ...args: string[]): string {
  return execFileSync("git", args, { cwd, env: GIT_ENV, encoding: "utf8", stdio: "pipe" });
}

/** The scenario's own look at a trapped repository, with every trap turned off. */
function inspect(cwd: string, ...args: string[]): string {
  const off = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false"];
  for (const name of ["evil", "sneaky"]) {
    for (const key of ["smudge", "clean", "process"]) off.push("-c", `filter.${name}.${key}=`);
    off.push("-c", `filter.${name}.required=false`);
  }
  return gitIn(cwd, ...off, ...args);
}

/** A program that leaves a mark named `name` in `ran` when anything runs it, and passes input on. */
function planted(ran: string, name: string): string {
  return `sh -c 'touch ${ran}/${name}; cat'`;
}

/** Makes round `n`'s repository, booby-trapped; returns its `git status`. */
async function hostileRepository(repo: string, ran: string, outside: string): Promise<void> {
  await mkdir(repo, { recursive: true });
  gitIn(repo, "init", "--quiet", "--initial-branch=main");
  await writeFile(join(repo, "a.txt"), "a\n");
  await writeFile(join(repo, "gone.txt"), "gone\n");
  await writeFile(join(repo, "-rf"), "dash\n");
  await writeFile(join(repo, ".gitattributes"), "* filter=evil diff=evil\n");
  gitIn(repo, "add", "-A");
  gitIn(repo, "commit", "--quiet", "-m", "first");
  for (const key of ["smudge", "clean", "process"]) {
    gitIn(repo, "config", `filter.evil.${key}`, planted(ran, `filter-${key}`));
  }
  gitIn(repo, "config", "filter.evil.required", "true");
  gitIn(repo, "config", "core.fsmonitor", planted(ran, "fsmonitor"));
  gitIn(repo, "config", "diff.external", planted(ran, "external-diff"));
  gitIn(repo, "config", "diff.evil.textconv", planted(ran, "textconv"));
  const included = join(repo, ".git", "included.config");
  await writeFile(included, `[filter "sneaky"]\n\tsmudge = ${planted(ran, "included-filter")}\n`);
  gitIn(repo, "config", "include.path", included);
  await writeFile(join(repo, ".gitattributes"), "* filter=evil diff=evil\n*.txt filter=sneaky\n");
  for (
    const hook of ["post-checkout", "reference-transaction", "pre-commit", "post-index-change"]
  ) {
    const path = join(repo, ".git", "hooks", hook);
    await writeFile(path, `#!/bin/sh\ntouch ${ran}/hook-${hook}\n`);
    await chmod(path, 0o755);
  }
  // Uncommitted and untracked: a change, a link to the secret, a script, an odd name.
  await writeFile(join(repo, "a.txt"), "a, edited\n");
  await symlink(join(outside, "secret.txt"), join(repo, "link"));
  await writeFile(join(repo, "run.sh"), "#!/bin/sh\necho hi\n", { mode: 0o755 });
  await writeFile(join(repo, "new\nline.txt"), "odd\n");
}

/** See the module doc. */
export const worktrees: Scenario = {
  name: "worktrees",
  description: "worktrees of booby-trapped repositories: no planted program runs, undo, delete",
  async run(context: ScenarioContext): Promise<void> {
    const rounds = context.pick(24, 6, 2);
    const next = random(context.seed + 34);
    const [ran, outside] = [join(context.base, "ran"), join(context.base, "outside")];
    await mkdir(ran, { recursive: true });
    await mkdir(outside, { recursive: true });
    await writeFile(join(outside, "secret.txt"), "SECRET\n");
    const script = await writeScript(context.base, "worktrees-script.json", [
      {
        toolCalls: [{
          id: "w",
          name: "write_file",
          arguments: { path: "notes.txt", content: "n\n" },
        }],
      },
      {
        toolCalls: [{
          id: "c",
          name: "run_command",
          arguments: { command: "printf 'b\\n' > a.txt && echo made > made.txt && rm -f gone.txt" },
        }],
      },
      { text: "done" },
    ]);
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      args: ["--mode", "auto", "--model", "scripted", "--script", script, "--worktrees"],
    });
    await server.initialize();
    for (let n = 0; n < rounds; n++) {
      const repo = join(context.base, "repos", String(n));
      await hostileRepository(repo, ran, outside);
      const from = next() < 0.5 ? "head" : "working-tree";
      context.run();
      if (!await round(context, server, repo, from, n)) return;
      const marks = await readdir(ran);
      if (marks.length > 0) {
        context.fail("escapes", "git-ran-planted", `round ${n} (${from}): ${marks.join(", ")}`);
        return;
      }
    }
    if (await readFile(join(outside, "secret.txt"), "utf8") !== "SECRET\n") {
      context.fail("escapes", "secret-changed", "the secret outside the repositories changed");
    }
    await context.checkAnswers(server, "end");
  },
};

/** One round: a session in a worktree of `repo` writes, runs, undoes and is deleted. */
async function round(
  context: ScenarioContext,
  server: Server,
  repo: string,
  from: "head" | "working-tree",
  n: number,
): Promise<boolean> {
  const status = inspect(repo, "status", "--porcelain", "--untracked-files=all");
  const index = await readFile(join(repo, ".git", "index"));
  const branches = inspect(repo, "branch", "--list");
  const opened = await server.call("session/new", {
    cwd: repo,
    mcpServers: [],
    _meta: { "acp-harness": { worktree: { from } } },
  });
  const result = opened?.result as
    | { sessionId: string; _meta?: { "acp-harness"?: { worktree?: { path: string } } } }
    | undefined;
  const path = result?._meta?.["acp-harness"]?.worktree?.path;
  if (!result || !path) {
    context.fail("other", "worktree-refused", `round ${n}: ${JSON.stringify(opened)}`);
    return await context.checkAnswers(server, `round ${n}`);
  }
  const { sessionId } = result;
  const before = await readFile(join(path, "a.txt"), "utf8");
  const stop = await server.result<{ stopReason: string }>("session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "edit" }],
  });
  if (stop.stopReason !== "end_turn") {
    context.fail("other", "turn", `round ${n}: ${stop.stopReason}`);
  }
  await server.result("session/prompt", { sessionId, prompt: [{ type: "text", text: "/undo" }] });
  const undone = await readFile(join(path, "a.txt"), "utf8").catch(() => "missing");
  if (
    undone !== before || existsSync(join(path, "made.txt")) ||
    existsSync(join(path, "notes.txt")) ||
    !existsSync(join(path, "gone.txt"))
  ) {
    context.fail("other", "undo", `round ${n} (${from}): a.txt ${JSON.stringify(undone)}`);
  }
  const outsideChanged =
    inspect(repo, "status", "--porcelain", "--untracked-files=all") !== status ||
    !(await readFile(join(repo, ".git", "index"))).equals(index);
  if (outsideChanged) context.fail("escapes", "checkout-changed", `round ${n} (${from})`);
  await server.result("session/delete", { sessionId });
  if (
    existsSync(path) || existsSync(`${path}.json`) || gitIn(repo, "branch", "--list") !== branches
  ) {
    context.fail("leftovers", "worktree", `round ${n}: ${path}`);
  }
  return await context.checkAnswers(server, `round ${n}`);
}
