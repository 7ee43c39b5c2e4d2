import assert from "node:assert/strict";
import {
  isSandboxLevel,
  levelsAtLeast,
  refusalLine,
  sandboxTightness,
} from "../../src/sandbox/sandbox.ts";

Deno.test("sandboxTightness() orders off < workspace-write < read-only", () => {
  assert.ok(sandboxTightness("off") < sandboxTightness("workspace-write"));
  assert.ok(sandboxTightness("workspace-write") < sandboxTightness("read-only"));
  assert.deepEqual(levelsAtLeast("off"), ["off", "workspace-write", "read-only"]);
  assert.deepEqual(levelsAtLeast("read-only"), ["read-only"]);
  assert.ok(isSandboxLevel("read-only") && !isSandboxLevel("none") && !isSandboxLevel(1));
});

const REFUSED: readonly [string, string][] = [
  ["a write outside", "sh: 1: cannot create /etc/x: Read-only file system"],
  ["a hard link out", "ln: failed to create hard link 'l' => '/x': Invalid cross-device link"],
  ["node's EROFS", "Error: EROFS: read-only file system, open '/etc/x'"],
  ["loopback", "bash: connect: Connection refused"],
  [
    "curl to loopback",
    "curl: (7) Failed to connect to localhost port 1: Couldn't connect to server",
  ],
  ["a name", "curl: (6) Could not resolve host: example.com"],
  ["resolv", "ping: example.com: Temporary failure in name resolution"],
  ["no route", "connect: Network is unreachable"],
  ["a fork bomb", "/bin/sh: 0: Cannot fork"],
  ["bash's fork", "bash: fork: Resource temporarily unavailable"],
];

for (const [what, output] of REFUSED) {
  Deno.test(`refusalLine() names the sandbox for ${what}`, () => {
    assert.equal(
      refusalLine("workspace-write", false, { output, exitCode: 1 }),
      "[sandbox workspace-write: writes outside the workspace and network access are refused]",
    );
  });
}

Deno.test("refusalLine() says nothing for a success, an ordinary failure or no sandbox", () => {
  const output = "sh: 1: cannot create /etc/x: Read-only file system";
  assert.equal(refusalLine("workspace-write", false, { output, exitCode: 0 }), undefined);
  assert.equal(refusalLine("off", false, { output, exitCode: 2 }), undefined);
  assert.equal(
    refusalLine("workspace-write", false, { output: "make: *** No rule", exitCode: 2 }),
    undefined,
  );
  // With the network open, a refused connection is the other side's answer, not the sandbox's.
  assert.equal(
    refusalLine("workspace-write", true, { output: "connect: Connection refused", exitCode: 1 }),
    undefined,
  );
});

Deno.test("refusalLine() at read-only says only /tmp is writable", () => {
  assert.equal(
    refusalLine("read-only", true, { output: "Read-only file system", exitCode: 1 }),
    "[sandbox read-only: writes anywhere but a private /tmp are refused]",
  );
});
