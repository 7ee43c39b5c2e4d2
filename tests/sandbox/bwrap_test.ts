import assert from "node:assert/strict";
import { bwrapArgs } from "../../src/sandbox/bwrap.ts";
import type { SandboxRequest } from "../../src/sandbox/sandbox.ts";

const BASE: SandboxRequest = {
  level: "workspace-write",
  roots: ["/home/u/w", "/srv/extra"],
  cwd: "/home/u/w/sub",
  network: false,
  hide: [],
  program: "/bin/sh",
  args: ["-c", "make"],
};

/** The index of `flag` followed by `values` in `args`, or -1. */
function at(args: readonly string[], flag: string, ...values: string[]): number {
  return args.findIndex((arg, index) =>
    arg === flag && values.every((value, offset) => args[index + 1 + offset] === value)
  );
}

Deno.test("bwrapArgs() makes the file system read-only, then binds each root writable", () => {
  const args = bwrapArgs(BASE);
  assert.ok(at(args, "--ro-bind", "/", "/") >= 0);
  assert.ok(at(args, "--bind", "/home/u/w", "/home/u/w") > at(args, "--ro-bind", "/", "/"));
  assert.ok(at(args, "--bind", "/srv/extra", "/srv/extra") > 0);
  assert.ok(at(args, "--dev", "/dev") >= 0 && at(args, "--proc", "/proc") >= 0);
  assert.deepEqual(args.slice(-6), ["--chdir", "/home/u/w/sub", "--", "/bin/sh", "-c", "make"]);
});

Deno.test("bwrapArgs() unshares everything, the network included, unless it is allowed", () => {
  const closed = bwrapArgs(BASE);
  for (const flag of ["--unshare-all", "--die-with-parent", "--new-session"]) {
    assert.ok(closed.includes(flag), flag);
  }
  assert.ok(!closed.includes("--share-net"));
  const open = bwrapArgs({ ...BASE, network: true });
  assert.ok(open.includes("--unshare-all") && open.includes("--share-net"));
});

Deno.test("bwrapArgs() binds a root under /tmp after the private /tmp, so it stays visible", () => {
  const args = bwrapArgs({ ...BASE, roots: ["/tmp/work"], cwd: "/tmp/work" });
  const tmpfs = at(args, "--tmpfs", "/tmp");
  assert.ok(tmpfs >= 0);
  assert.ok(at(args, "--bind", "/tmp/work", "/tmp/work") > tmpfs);
});

Deno.test("bwrapArgs() at read-only binds no root writable, but each visible after /tmp", () => {
  const args = bwrapArgs({ ...BASE, level: "read-only", roots: ["/tmp/w"], cwd: "/tmp/w" });
  assert.equal(args.indexOf("--bind"), -1);
  assert.ok(at(args, "--ro-bind", "/tmp/w", "/tmp/w") > at(args, "--tmpfs", "/tmp"));
});

Deno.test("bwrapArgs() hides directories with a tmpfs and files with /dev/null, after the roots", () => {
  const args = bwrapArgs({
    ...BASE,
    hide: [
      { path: "/home/u/.ssh", directory: true },
      { path: "/home/u/.netrc", directory: false },
      // Inside a root: hidden all the same (mounted over the writable root).
      { path: "/home/u/w/.aws", directory: true },
    ],
  });
  const lastBind = at(args, "--bind", "/srv/extra", "/srv/extra");
  assert.ok(at(args, "--tmpfs", "/home/u/.ssh") > lastBind);
  assert.ok(at(args, "--ro-bind", "/dev/null", "/home/u/.netrc") > lastBind);
  assert.ok(at(args, "--tmpfs", "/home/u/w/.aws") > lastBind);
});

Deno.test("bwrapArgs() hides a directory that holds a session root, then binds the root over it", () => {
  // A session's worktree inside the (hidden) data directory sees itself, not the other sessions.
  const args = bwrapArgs({
    ...BASE,
    roots: ["/home/u/.acp-harness/worktrees/s1"],
    cwd: "/home/u/.acp-harness/worktrees/s1",
    hide: [
      { path: "/home/u/.acp-harness", directory: true },
      { path: "/home/u/.acp-harness/worktrees/s1/.aws", directory: true },
    ],
  });
  const root = "/home/u/.acp-harness/worktrees/s1";
  const tmpfs = at(args, "--tmpfs", "/home/u/.acp-harness");
  const binds = args.flatMap((arg, i) =>
    arg === "--bind" && args[i + 1] === root && args[i + 2] === root ? [i] : []
  );
  assert.ok(tmpfs > 0);
  assert.equal(binds.length, 2);
  const rebound = binds[1]!;
  assert.ok(rebound > tmpfs, "the root is bound again after the tmpfs");
  assert.ok(at(args, "--tmpfs", "/home/u/.acp-harness/worktrees/s1/.aws") > rebound);
  // A hidden directory that is itself a root stays visible.
  const own = bwrapArgs({
    ...BASE,
    roots: ["/home/u/.config/gh"],
    cwd: "/home/u/.config/gh",
    hide: [{ path: "/home/u/.config/gh", directory: true }],
  });
  assert.equal(at(own, "--tmpfs", "/home/u/.config/gh"), -1);
});

Deno.test("bwrapArgs() skips what the private /tmp hides anyway, unless a root shows it", () => {
  const args = bwrapArgs({
    ...BASE,
    roots: ["/tmp/w"],
    cwd: "/tmp/w",
    hide: [
      { path: "/tmp/data", directory: true },
      { path: "/tmp/w/data", directory: true },
    ],
  });
  assert.equal(at(args, "--tmpfs", "/tmp/data"), -1);
  assert.ok(at(args, "--tmpfs", "/tmp/w/data") > at(args, "--bind", "/tmp/w", "/tmp/w"));
});
