/**
 * Only a well-formed `selected` answer naming an offered option allows a tool (issue 7, defect 3).
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { readAnswer } from "../../src/protocol/ask_permission.ts";
import { startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** Answers that must never count as consent. */
const MALFORMED: ReadonlyArray<readonly [string, unknown]> = [
  ["rejected with an allow id", { outcome: { outcome: "rejected", optionId: "allow_once" } }],
  ["allowed", { outcome: { outcome: "allowed", optionId: "allow_once" } }],
  ["missing inner outcome", { outcome: { optionId: "allow_once" } }],
  ["null inner outcome", { outcome: { outcome: null, optionId: "allow_once" } }],
  ["capitalised", { outcome: { outcome: "Selected", optionId: "allow_once" } }],
  ["outcome a string", { outcome: "selected", optionId: "allow_once" }],
  ["outcome an array", { outcome: [{ outcome: "selected", optionId: "allow_once" }] }],
  ["null outcome", { outcome: null }],
  ["empty result", {}],
  ["null result", null],
  ["string result", "allow_once"],
  ["number option id", { outcome: { outcome: "selected", optionId: 0 } }],
  ["array option id", { outcome: { outcome: "selected", optionId: ["allow_once"] } }],
  ["padded option id", { outcome: { outcome: "selected", optionId: "allow_once " } }],
  ["upper-case option id", { outcome: { outcome: "selected", optionId: "ALLOW_ONCE" } }],
  ["inherited name", { outcome: { outcome: "selected", optionId: "constructor" } }],
  ["missing option id", { outcome: { outcome: "selected" } }],
  ["reject once", { outcome: { outcome: "selected", optionId: "reject_once" } }],
];

Deno.test("readAnswer accepts only selected offered options and cancelled", () => {
  for (const [label, answer] of MALFORMED.slice(0, -1)) {
    const read = readAnswer(answer);
    assert.equal(typeof read, "object", label);
  }
  assert.equal(
    readAnswer({ outcome: { outcome: "selected", optionId: "allow_once" } }),
    "allow_once",
  );
  assert.equal(
    readAnswer({ outcome: { outcome: "selected", optionId: "allow_always", extra: 1 } }),
    "allow_always",
  );
  assert.equal(readAnswer({ outcome: { outcome: "cancelled" } }), "cancelled");
  assert.equal(
    readAnswer({ outcome: { outcome: "selected", optionId: "reject_once" } }),
    "reject_once",
  );
});

Deno.test("a malformed permission answer never runs the tool, and the turn goes on", async () => {
  await using temp = await tempDir("acp-harness-consent-");
  const cwd = temp.path;
  const script = MALFORMED.flatMap((_, index) => [
    {
      toolCalls: [{
        id: `w${index}`,
        name: "write_file",
        arguments: { path: `w${index}.txt`, content: "x" },
      }],
    },
    { text: `step ${index}` },
  ]);
  const server = startServer({ script, config: { model: "scripted", mode: "ask" } });
  try {
    let next = 0;
    server.client.handlers.set("session/request_permission", () => MALFORMED[next]![1]);
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd);
    for (next = 0; next < MALFORMED.length; next++) {
      const label = MALFORMED[next]![0];
      assert.equal(await server.client.prompt(sessionId, `try ${label}`), "end_turn", label);
      assert.equal(existsSync(join(cwd, `w${next}.txt`)), false, `ran after: ${label}`);
      const last = server.client.updates(sessionId)
        .map(({ update }) => update)
        .filter((update) => update.toolCallId === `w${next}`).at(-1);
      assert.equal(last?.status, "failed", label);
    }
    assert.deepEqual(server.client.problems, []);
    assert.ok(server.logs.some((line) => line.includes("malformed permission answer")));
  } finally {
    await server.disconnect();
  }
});

Deno.test("no answer, or an answer to another id, is a refusal once the timeout passes", async () => {
  await using temp = await tempDir("acp-harness-consent-");
  const cwd = temp.path;
  const script = [
    { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x" } }] },
    { text: "one" },
    { toolCalls: [{ id: "w2", name: "write_file", arguments: { path: "b.txt", content: "x" } }] },
    { text: "two" },
  ];
  const server = startServer({
    script,
    config: { model: "scripted", mode: "ask", permissionTimeout: 1 },
  });
  try {
    const { client } = server;
    let round = 0;
    client.handlers.set("session/request_permission", () => {
      const asked = client.frames.filter((frame) => frame.method === "session/request_permission");
      const id = asked.at(-1)?.id;
      // Round 2 answers "allow" under the id written as a string: not an answer to this request.
      if (round === 1) {
        void client.sendRaw({
          jsonrpc: "2.0",
          id: String(id),
          result: { outcome: { outcome: "selected", optionId: "allow_once" } },
        });
      }
      return new Promise(() => {});
    });
    await client.initialize();
    const sessionId = await client.newSession(cwd);
    for (round = 0; round < 2; round++) {
      assert.equal(await client.prompt(sessionId, `round ${round}`), "end_turn");
    }
    assert.equal(existsSync(join(cwd, "a.txt")), false);
    assert.equal(existsSync(join(cwd, "b.txt")), false);
    const failed = client.updates(sessionId).map(({ update }) => update)
      .filter((update) => update.status === "failed");
    assert.deepEqual(failed.map((update) => update.toolCallId), ["w1", "w2"]);
    assert.equal(
      server.logs.filter((line) => line.includes("permission request timed out")).length,
      2,
    );
  } finally {
    await server.disconnect();
  }
});
