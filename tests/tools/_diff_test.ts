import assert from "node:assert/strict";
import { diffDisplay, MAX_DIFF_CHARS } from "../../src/tools/_diff.ts";

Deno.test("diffDisplay() shows a small change whole", () => {
  assert.deepEqual(diffDisplay("/w/a", null, "new\n"), [
    { type: "diff", path: "/w/a", oldText: null, newText: "new\n" },
  ]);
  assert.deepEqual(diffDisplay("/w/a", "x\n", "y\n"), [
    { type: "diff", path: "/w/a", oldText: "x\n", newText: "y\n" },
  ]);
});

Deno.test("diffDisplay() shows the changed lines of a large file with three lines around", () => {
  const lines = Array.from({ length: 40_000 }, (_, index) => `line ${index + 1}`);
  const before = lines.join("\n") + "\n";
  const after = before.replace("line 20000\n", "changed\n");
  assert.ok(before.length + after.length > MAX_DIFF_CHARS);
  const display = diffDisplay("/w/big.txt", before, after);
  assert.deepEqual(display[0], {
    type: "diff",
    path: "/w/big.txt",
    oldText: "line 19997\nline 19998\nline 19999\nline 20000\nline 20001\nline 20002\nline 20003\n",
    newText: "line 19997\nline 19998\nline 19999\nchanged\nline 20001\nline 20002\nline 20003\n",
  });
  assert.deepEqual(display[1], {
    type: "text",
    text: "The diff shows lines 19997–20003 of /w/big.txt (the whole file is too large to show)",
  });
});

Deno.test("diffDisplay() shows an edit at either end of a large file", () => {
  const body = "x\n".repeat(200_000);
  const [first] = diffDisplay("/w/f", body, "new\n" + body);
  assert.deepEqual(first, {
    type: "diff",
    path: "/w/f",
    oldText: "x\nx\nx\n",
    newText: "new\nx\nx\nx\n",
  });
  const [last] = diffDisplay("/w/f", body, body + "end");
  assert.deepEqual(last, {
    type: "diff",
    path: "/w/f",
    oldText: "x\nx\nx\n",
    newText: "x\nx\nx\nend",
  });
});

Deno.test("diffDisplay() replaces a diff too large to show with a note", () => {
  const big = "y".repeat(MAX_DIFF_CHARS + 1);
  assert.deepEqual(diffDisplay("/w/n", null, big), [
    {
      type: "text",
      text: `New file /w/n is too large to show as a diff (${MAX_DIFF_CHARS + 1} characters)`,
    },
  ]);
  const [note] = diffDisplay("/w/n", "a" + big, "b" + big.replaceAll("y", "z"));
  assert.equal(note?.type, "text");
  assert.match((note as { text: string }).text, /^The change to \/w\/n is too large to show/);
});
