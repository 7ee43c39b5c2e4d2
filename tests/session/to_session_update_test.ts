import assert from "node:assert/strict";
import {
  planUpdate,
  toolCallContent,
  toSessionUpdate,
} from "../../src/session/to_session_update.ts";
import type { ToolContent } from "../../src/tools/tool.ts";
import { schemaProblems } from "../_helpers/acp_schema.ts";

const PARTS: readonly ToolContent[] = [
  { type: "text", text: "Took it" },
  { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
  { type: "resource_link", uri: "file:///tmp/page.html", name: "page.html", mimeType: "text/html" },
  { type: "resource_link", uri: "https://example.com/", name: "site" },
];

Deno.test("toSessionUpdate() shows a tool result's text, images and links as ACP content blocks", () => {
  assert.deepEqual(
    toSessionUpdate({
      type: "tool-call-update",
      toolCallId: "c1",
      status: "completed",
      text: "Took it\n[image: image/png]\n…",
      parts: PARTS,
    }),
    {
      sessionUpdate: "tool_call_update",
      toolCallId: "c1",
      status: "completed",
      content: [
        { type: "content", content: { type: "text", text: "Took it" } },
        {
          type: "content",
          content: { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
        },
        {
          type: "content",
          content: {
            type: "resource_link",
            uri: "file:///tmp/page.html",
            name: "page.html",
            mimeType: "text/html",
          },
        },
        {
          type: "content",
          content: { type: "resource_link", uri: "https://example.com/", name: "site" },
        },
      ],
    },
  );
});

Deno.test("toSessionUpdate() prefers a tool's display, then its parts, then its text", () => {
  const update = (extra: Record<string, unknown>): unknown =>
    toSessionUpdate({
      type: "tool-call-update",
      toolCallId: "c1",
      status: "failed",
      text: "plain",
      ...extra,
    });
  assert.deepEqual(update({}), {
    sessionUpdate: "tool_call_update",
    toolCallId: "c1",
    status: "failed",
    content: [{ type: "content", content: { type: "text", text: "plain" } }],
  });
  assert.deepEqual(
    update({ parts: PARTS.slice(1, 2), display: [{ type: "terminal", terminalId: "t1" }] }),
    {
      sessionUpdate: "tool_call_update",
      toolCallId: "c1",
      status: "failed",
      content: [{ type: "terminal", terminalId: "t1" }],
    },
  );
});

Deno.test("toolCallContent() maps an image a tool displays", () => {
  assert.deepEqual(toolCallContent({ type: "image", mimeType: "image/gif", data: "R0lGOA==" }), {
    type: "content",
    content: { type: "image", mimeType: "image/gif", data: "R0lGOA==" },
  });
});

Deno.test("toSessionUpdate() sends a plan whole, valid against the ACP schema", () => {
  const entries = [
    { content: "Read the test", status: "completed", priority: "low" },
    { content: "Fix the parser", status: "in_progress", priority: "high" },
    { content: "Run the suite", status: "pending", priority: "medium" },
  ] as const;
  const update = toSessionUpdate({ type: "plan", entries });
  assert.deepEqual(update, { sessionUpdate: "plan", entries });
  assert.deepEqual(planUpdate([]), { sessionUpdate: "plan", entries: [] });
  for (const sent of [update, planUpdate([])]) {
    const frame = {
      jsonrpc: "2.0",
      method: "session/update",
      params: { sessionId: "s", update: sent },
    };
    assert.deepEqual(schemaProblems(frame), []);
  }
});
