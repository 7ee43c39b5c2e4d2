import assert from "node:assert/strict";
import { FileAttachmentStore } from "../../src/store/attachment_store.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import { header, names, sessionId, tempStore, warned } from "./_helpers.ts";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 1, 2, 3, 4]);

async function sha256(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

function imageEvent(sha: string): StoredEvent {
  return {
    type: "user",
    messageId: crypto.randomUUID(),
    content: [{ type: "text", text: "look" }, {
      type: "image",
      mimeType: "image/png",
      sha256: sha,
    }],
  };
}

Deno.test("FileAttachmentStore: put and get round-trip, content-addressed and written once", async () => {
  await using temp = await tempStore();
  const store = temp.store.attachments;
  const sha = await store.put(PNG, "image/png");
  assert.equal(sha, await sha256(PNG));
  const path = `${temp.dir}/attachments/${sha.slice(0, 2)}/${sha}`;
  assert.equal(store.pathOf(sha), path);
  assert.deepEqual(await Deno.readFile(path), PNG);
  assert.deepEqual(await store.get(sha), PNG);
  const { mtime } = await Deno.stat(path);
  assert.equal(await store.put(PNG.slice(), "image/webp"), sha);
  assert.deepEqual((await Deno.stat(path)).mtime, mtime, "an intact copy is not rewritten");
  assert.deepEqual(
    await names(`${temp.dir}/attachments/${sha.slice(0, 2)}`),
    [sha],
    "no temporary files are left",
  );

  await assert.rejects(store.put(PNG, "png"), TypeError);
  assert.equal(await store.get("not-a-hash"), undefined);
  assert.equal(await store.get("0".repeat(64)), undefined);
  await store.delete(sha);
  await store.delete(sha);
  assert.equal(await store.get(sha), undefined);
});

Deno.test("FileAttachmentStore: get detects corruption; put replaces a corrupt copy", async () => {
  await using temp = await tempStore();
  const store = new FileAttachmentStore({
    host: temp.host,
    dir: `${temp.dir}/files/`,
    logger: { error() {}, warn: (m) => temp.warnings.push(m), info() {}, debug() {} },
  });
  const sha = await store.put(PNG, "image/png");
  const path = store.pathOf(sha);
  assert.ok(path.startsWith(`${temp.dir}/files/`) && !path.includes("//"));
  const flipped = PNG.slice();
  flipped[9] = 0xff;
  await Deno.writeFile(path, flipped);
  assert.equal(await store.get(sha), undefined);
  assert.ok(warned(temp, "attachment is corrupt"));
  await Deno.writeFile(path, PNG.subarray(0, 4));
  assert.equal(await store.get(sha), undefined);
  assert.equal(await store.put(PNG, "image/png"), sha);
  assert.deepEqual(await store.get(sha), PNG);
});

Deno.test("JsonlSessionStore.delete(): a shared attachment survives the first delete and goes with the last", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const shared = await store.attachments.put(PNG, "image/png");
  const own = await store.attachments.put(new Uint8Array([1, 2, 3]), "image/gif");
  const a = sessionId(1);
  const b = sessionId(2);
  await store.create(header(a, host));
  await store.create(header(b, host));
  await store.append(a, [imageEvent(shared), imageEvent(own)], { sync: true });
  // B is written by another store (another process) to make sure its references are seen.
  await temp.open().append(b, [imageEvent(shared)], { sync: true });

  await store.delete(a);
  assert.equal(await store.attachments.get(own), undefined, "only A referenced it");
  assert.deepEqual(await store.attachments.get(shared), PNG, "B still references it");
  await temp.open().delete(b);
  assert.equal(await store.attachments.get(shared), undefined);
});

Deno.test("JsonlSessionStore.delete(): references survive an index rebuild", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const shared = await store.attachments.put(PNG, "image/png");
  await store.create(header(sessionId(1), host));
  await store.create(header(sessionId(2), host));
  await store.append(sessionId(1), [imageEvent(shared)], { sync: true });
  await store.append(sessionId(2), [imageEvent(shared)], { sync: true });
  await Deno.remove(`${temp.dir}/index.jsonl`);
  const fresh = temp.open();
  await fresh.delete(sessionId(1));
  assert.deepEqual(await fresh.attachments.get(shared), PNG);
  await fresh.delete(sessionId(2));
  assert.equal(await fresh.attachments.get(shared), undefined);
});
