/**
 * The steering inbox: messages pushed while a turn runs are taken at its next step (recorded as
 * `user` events and shown as `user_message_chunk`s, images with their bytes), and handed back when
 * the turn's loop ends.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { StoredEvent } from "../../src/store/session_store.ts";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import { SteeringInbox } from "../../src/session/steering_inbox.ts";

Deno.test("SteeringInbox.take() records each message and shows its parts under one message id", () => {
  const recorded: StoredEvent[] = [];
  const sent: SessionUpdate[] = [];
  const inbox = new SteeringInbox({
    record: (events) => void recorded.push(...events),
    send: (update) => void sent.push(update),
    flush: () => {},
  });
  assert.equal(inbox.pending, false);
  assert.deepEqual(inbox.take(), []);
  const image = { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" } as const;
  inbox.push({
    content: [{ type: "text", text: "look" }, image],
    stored: [{ type: "text", text: "look" }, {
      type: "image",
      mimeType: "image/png",
      sha256: "ab",
    }],
  });
  inbox.push({
    content: [{ type: "text", text: "then this" }],
    stored: [{ type: "text", text: "then this" }],
  });
  const taken = inbox.take();
  assert.deepEqual(taken.map((message) => message.role), ["user", "user"]);
  assert.equal(inbox.pending, false);
  assert.deepEqual(recorded.map((event) => event.type), ["user", "user"]);
  const first = recorded[0] as Extract<StoredEvent, { type: "user" }>;
  assert.deepEqual(first.content[1], { type: "image", mimeType: "image/png", sha256: "ab" });
  const ids = sent.map((update) => (update as { messageId?: string }).messageId);
  assert.equal(ids[0], first.messageId);
  assert.equal(ids[1], first.messageId, "both parts under the first message's id");
  assert.notEqual(ids[2], first.messageId);
  assert.deepEqual((sent[1] as { content: unknown }).content, image);
});

Deno.test("SteeringInbox.close() hands back what no step took and refuses later messages", () => {
  const inbox = new SteeringInbox({ record: () => {}, send: () => undefined, flush: () => {} });
  const message = { content: [{ type: "text", text: "late" }], stored: [] } as const;
  inbox.push(message);
  assert.deepEqual(inbox.close(), [message]);
  assert.equal(inbox.push(message), false);
  assert.equal(inbox.pending, false);
});
