import assert from "node:assert/strict";
import {
  canonicalBody,
  differenceCount,
  firstDifference,
  placePaths,
  restorePaths,
} from "../../src/llm/canonical_request.ts";

Deno.test("canonicalBody() replaces roots (nested ones first), the data dir, home, times, dates, UUIDs and tool-call ids", () => {
  const body = {
    z: 1,
    messages: [
      {
        role: "system",
        content: "cwd /w/p, extra /w/p/sub, data /d, home /h, at 2026-12-02T10:11:12.5Z",
      },
      { role: "user", content: "session 0f5c1d2e-3a4b-4c5d-8e9f-0123456789ab on 2026-12-02" },
      { role: "assistant", tool_calls: [{ id: "call_9", type: "function" }, { id: "call_3" }] },
      { role: "tool", tool_call_id: "call_3", content: "/w/p/sub/a.txt" },
    ],
  };
  const canonical = canonicalBody(body, { roots: ["/w/p", "/w/p/sub"], dataDir: "/d", home: "/h" });
  assert.deepEqual(canonical, {
    messages: [
      { content: "cwd <root>, extra <root1>, data <data>, home <home>, at <time>", role: "system" },
      { content: "session <uuid> on <date>", role: "user" },
      { role: "assistant", tool_calls: [{ id: "<id1>", type: "function" }, { id: "<id2>" }] },
      { content: "<root1>/a.txt", role: "tool", tool_call_id: "<id2>" },
    ],
    z: 1,
  });
  // Keys sorted: the same form whatever the order they were written in.
  assert.equal(
    JSON.stringify(canonicalBody({ b: 1, a: { d: 2, c: 3 } })),
    JSON.stringify(canonicalBody({ a: { c: 3, d: 2 }, b: 1 })),
  );
});

Deno.test("firstDifference() and differenceCount() name where two requests part, arrays and missing keys too", () => {
  const a = { messages: [{ content: "x" }, { content: "y" }], model: "m" };
  assert.equal(firstDifference(a, { ...a, model: "n" }), "model");
  assert.equal(firstDifference(a, { messages: [{ content: "x" }], model: "m" }), "messages[1]");
  assert.equal(firstDifference(a, { messages: a.messages }), "model");
  assert.equal(firstDifference("a", "b"), "(the body)");
  assert.equal(
    differenceCount(a, { messages: [{ content: "q" }, { content: "r" }], model: "n" }),
    3,
  );
  assert.equal(
    differenceCount(a, { messages: [{ content: "q" }, { content: "r" }], model: "n" }, 2),
    2,
  );
});

Deno.test("placePaths() and restorePaths() move a value between checkouts, keys untouched", () => {
  const stored = placePaths({ "/w/p": "/w/p/a and /w/p2/b", list: ["/d/x"] }, {
    roots: ["/w/p"],
    dataDir: "/d",
  });
  assert.deepEqual(stored, { "/w/p": "<root>/a and <root>2/b", list: ["<data>/x"] });
  assert.deepEqual(restorePaths(stored, { roots: ["/c/q"], dataDir: "/e" }), {
    "/w/p": "/c/q/a and /c/q2/b",
    list: ["/e/x"],
  });
  assert.deepEqual(placePaths({ a: "/w" }, {}), { a: "/w" });
});
