/**
 * The store contract run against every store: the JSONL store (on a temporary data directory,
 * removed after each test) and the in-memory store.
 *
 * @module
 */
import { MemoryAttachmentStore } from "../../src/store/memory_attachment_store.ts";
import { MemorySessionStore } from "../../src/store/memory_session_store.ts";
import { EPOCH, tempStore } from "./_helpers.ts";
import { storeContract } from "./_session_store_contract.ts";

storeContract("JsonlSessionStore", async () => {
  const temp = await tempStore();
  return {
    store: temp.store,
    attachments: temp.store.attachments,
    tick: (ms) => temp.host.tick(ms),
    reopen: () => temp.open(),
    [Symbol.asyncDispose]: () => temp[Symbol.asyncDispose](),
  };
});

storeContract("MemorySessionStore", () => {
  let now = EPOCH;
  const attachments = new MemoryAttachmentStore();
  const store = new MemorySessionStore({ attachments, now: () => now });
  return Promise.resolve({
    store,
    attachments,
    tick: (ms) => now += ms,
    [Symbol.asyncDispose]: () => Promise.resolve(),
  });
});
