import assert from "node:assert/strict";
import { toolCallContent, toSessionUpdate } from "../../src/session/updates.ts";
import type { ToolContent } from "../../src/tools/tool.ts";

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
