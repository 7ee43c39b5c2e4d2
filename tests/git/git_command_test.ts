import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { NodeHost } from "../../src/host/node_host.ts";
import { git, GitError, runGit } from "../../src/git/git_command.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const host = new NodeHost();

describe("runGit", () => {
  it("collects the output and the exit code", async () => {
    const result = await runGit(host, ["--version"], { cwd: "/" });
    assert.equal(result.code, 0);
    assert.match(result.stdout, /^git version \d/);
  });

  it("feeds standard input", async () => {
    const out = await git(host, ["hash-object", "--stdin"], { cwd: "/", stdin: "hello\n" });
    assert.equal(out.trim(), "ce013625030ba8dba906f756967f9e9ca394464a");
  });

  it("gives a non-zero exit as a result and as a GitError from git()", async () => {
    await using temp = await tempDir("acp-harness-git-");
    const dir = temp.path;
    {
      const result = await runGit(host, ["rev-parse", "--show-toplevel"], { cwd: dir });
      assert.notEqual(result.code, 0);
      assert.match(result.stderr, /not a git repository/);
      await assert.rejects(
        git(host, ["rev-parse", "--show-toplevel"], { cwd: dir }),
        (error: unknown) =>
          error instanceof GitError && error.code === 128 &&
          /git rev-parse --show-toplevel failed \(exit 128\): .*not a git repository/.test(
            error.message,
          ),
      );
    }
  });

  it("fails past maxOutput", async () => {
    await assert.rejects(
      git(host, ["hash-object", "--stdin"], { cwd: "/", stdin: "x", maxOutput: 10 }),
      /printed more than 10 bytes/,
    );
  });

  it("refuses an aborted signal before it starts", async () => {
    await assert.rejects(
      runGit(host, ["--version"], { cwd: "/", signal: AbortSignal.abort(new Error("stop")) }),
      /stop/,
    );
  });
});
