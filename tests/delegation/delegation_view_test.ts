import assert from "node:assert/strict";
import {
  DelegationView,
  MAX_FINAL_TEXT_CHARS,
  MAX_VIEW_CHARS,
} from "../../src/delegation/delegation_view.ts";
import type { SessionUpdate } from "../../src/protocol/agent_client.ts";
import type { ToolDisplay } from "../../src/tools/tool.ts";
import { settle } from "../_helpers/wait.ts";

function chunk(text: string): SessionUpdate {
  return { sessionUpdate: "agent_message_chunk", content: { type: "text", text } };
}

/** A view and what it published; `published()` resolves after the next publication. */
function view(): { view: DelegationView; sent: ToolDisplay[][]; published: () => Promise<void> } {
  const sent: ToolDisplay[][] = [];
  let wake = (): void => {};
  const result = new DelegationView((display) => {
    sent.push([...display]);
    wake();
  });
  return {
    view: result,
    sent,
    published: () => new Promise<void>((resolve) => wake = resolve),
  };
}

const texts = (display: readonly ToolDisplay[]): string[] =>
  display.map((item) => item.type === "text" ? item.text : item.type);

Deno.test("DelegationView publishes the updates of one task once, as the whole view", async () => {
  const { view: v, sent, published } = view();
  const next = published();
  for (let index = 0; index < 1000; index++) v.apply(chunk("x"));
  v.apply({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Read a.txt", status: "pending" });
  v.apply({ sessionUpdate: "agent_thought_chunk", content: { type: "text", text: "hidden" } });
  await next;
  assert.equal(sent.length, 1);
  assert.deepEqual(texts(sent[0] as ToolDisplay[]), [
    "x".repeat(1000),
    "[tool] Read a.txt (pending)",
  ]);
  const again = published();
  v.apply({
    sessionUpdate: "tool_call_update",
    toolCallId: "t1",
    status: "completed",
    title: "Read b.txt",
  });
  v.apply({ sessionUpdate: "tool_call_update", toolCallId: "unknown", status: "failed" });
  v.apply(chunk("Done."));
  await again;
  assert.equal(sent.length, 2);
  assert.deepEqual(texts(sent[1] as ToolDisplay[]), [
    "x".repeat(1000),
    "[tool] Read b.txt (completed)",
    "Done.",
  ]);
  v.close();
});

Deno.test("DelegationView.finalText() is the text after the last tool call, else all of it", () => {
  const { view: v } = view();
  v.apply(chunk("Looking. "));
  assert.equal(v.finalText(), "Looking. ");
  v.apply({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Read", status: "pending" });
  assert.equal(v.finalText(), "Looking. ");
  v.apply(chunk("The answer."));
  assert.equal(v.finalText(), "The answer.");
  v.apply(chunk("x".repeat(MAX_FINAL_TEXT_CHARS)));
  assert.ok(v.finalText().endsWith(`(cut at ${MAX_FINAL_TEXT_CHARS} characters)`));
  v.close();
});

Deno.test("DelegationView shows the last MAX_VIEW_CHARS of a long output", () => {
  const { view: v } = view();
  v.apply(chunk("a".repeat(MAX_VIEW_CHARS)));
  v.apply({ sessionUpdate: "tool_call", toolCallId: "t1", title: "Run", status: "pending" });
  v.apply(chunk("tail"));
  const shown = texts(v.display());
  assert.equal(shown.at(-1), "tail");
  assert.equal(shown.at(-2), "[tool] Run (pending)");
  assert.ok((shown[0] as string).startsWith("…"));
  assert.ok(shown.join("").length <= MAX_VIEW_CHARS + 1);
  v.close();
});

Deno.test("DelegationView.flush() publishes at once; close() drops what is scheduled", async () => {
  const { view: v, sent } = view();
  v.apply(chunk("now"));
  v.flush();
  assert.equal(sent.length, 1);
  v.flush();
  assert.equal(sent.length, 1, "nothing more to publish");
  v.apply(chunk(" never"));
  v.close();
  v.apply(chunk(" closed"));
  await settle();
  assert.equal(sent.length, 1);
});
