/**
 * Two real processes share one data directory: each appends to its own session while both update
 * the shared index (every append writes an index line, and the index is rewritten often).
 *
 * @module
 */
import assert from "node:assert/strict";
import { NodeHost } from "../../src/host/node_host.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import { names, sessionId } from "./_helpers.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const STORE_URL = new URL("../../src/store/jsonl_session_store.ts", import.meta.url).href;
const HOST_URL = new URL("../../src/host/node_host.ts", import.meta.url).href;
const BATCHES = 150;

/** The child: create a session, say "ready", wait for "go" on stdin, append, print its timing. */
const CHILD = `
const [storeUrl, hostUrl, dir, id, batches] = Deno.args;
const { JsonlSessionStore } = await import(storeUrl);
const { NodeHost } = await import(hostUrl);
const host = new NodeHost();
const store = new JsonlSessionStore({
  host, dataDir: dir, indexUpdateIntervalMs: 0, indexCompactSlack: 3,
  logger: { error: (m, f) => console.error(m, f), warn: (m, f) => console.error(m, f), info() {}, debug() {} },
});
const lease = await store.acquire(id);
await store.create({ version: 1, id, cwd: "/work/" + id, additionalDirectories: [], createdAt: new Date().toISOString() });
console.log("ready");
const stdin = Deno.stdin.readable.pipeThrough(new TextDecoderStream()).getReader();
for (let line = ""; !line.includes("\\n");) line += (await stdin.read()).value ?? "\\n";
stdin.releaseLock();
const started = Date.now();
for (let n = 0; n < Number(batches); n++) {
  const events = [{ type: "turn_start" }, { type: "assistant", text: "x".repeat(n * 7 % 300) }];
  if (n % 10 === 0) events.push({ type: "title", title: id + " title " + n });
  await store.append(id, events, { sync: n % 25 === 0 });
  if (n % 20 === 0) await store.list({ limit: 5 });
}
const ended = Date.now();
await lease.release();
console.log("done " + started + " " + ended);
`;

Deno.test("JsonlSessionStore: two processes append to their sessions and share the index", async () => {
  await using temp = await tempDir("acp-store-2p-");
  const dir = temp.path;
  const host = new NodeHost();
  const children: Deno.ChildProcess[] = [];
  try {
    const ids = [sessionId(1), sessionId(2)];
    for (const id of ids) {
      children.push(
        new Deno.Command(Deno.execPath(), {
          args: ["eval", "--no-config", CHILD, STORE_URL, HOST_URL, dir, id, String(BATCHES)],
          cwd: dir,
          stdin: "piped",
          stdout: "piped",
          stderr: "piped",
        }).spawn(),
      );
    }
    const outputs = children.map((child) => ({
      stdout: child.stdout.pipeThrough(new TextDecoderStream()).getReader(),
      stderr: new Response(child.stderr).text(),
    }));
    for (const output of outputs) {
      const { value } = await output.stdout.read();
      assert.equal(value?.trim(), "ready");
    }
    // Both are ready: start them together.
    for (const child of children) {
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode("go\n"));
      await writer.close();
    }
    const results = await Promise.all(outputs.map(async (output, index) => {
      let rest = "";
      for (;;) {
        const { value, done } = await output.stdout.read();
        if (done) break;
        rest += value;
      }
      const status = await children[index]!.status;
      return { rest, stderr: await output.stderr, code: status.code };
    }));
    const spans: number[][] = [];
    for (const result of results) {
      assert.equal(result.code, 0, result.stderr);
      const [word, ...times] = result.rest.trim().split(" ");
      assert.equal(word, "done");
      spans.push(times.map(Number));
      assert.equal(result.stderr, "", "no warnings: no torn or corrupt index lines were seen");
    }
    const [[startA, endA], [startB, endB]] = spans as [[number, number], [number, number]];
    assert.ok(startA < endB && startB < endA, `the appends overlapped in time: ${spans}`);

    // Every index line is whole JSON: nothing interleaved.
    const indexText = await Deno.readTextFile(`${dir}/index.jsonl`);
    assert.ok(indexText.endsWith("\n"));
    for (const line of indexText.trimEnd().split("\n")) JSON.parse(line);

    const warnings: string[] = [];
    const store = new JsonlSessionStore({
      host,
      dataDir: dir,
      logger: { error() {}, warn: (m) => warnings.push(m), info() {}, debug() {} },
    });
    const { sessions } = await store.list({ limit: 10 });
    assert.deepEqual(sessions.map((session) => session.id).sort(), ids);
    for (const id of ids) {
      const loaded = await store.load(id);
      assert.ok(loaded);
      const records = loaded.records;
      // load checks that seq runs 1, 2, 3, …: no record was lost or duplicated.
      const expected = BATCHES * 2 + Math.ceil(BATCHES / 10);
      assert.equal(records.length, expected);
      const summary = sessions.find((session) => session.id === id);
      assert.equal(summary?.cwd, `/work/${id}`);
      assert.equal(summary?.updatedAt, records.at(-1)?.time);
      assert.equal(summary?.title, `${id} title ${Math.floor((BATCHES - 1) / 10) * 10}`);
    }
    assert.deepEqual(warnings, []);
    assert.deepEqual(
      await names(`${dir}/locks`),
      [],
      "both leases released",
    );
  } finally {
    for (const child of children) {
      try {
        child.kill("SIGKILL");
      } catch {
        // Already exited.
      }
    }
    await Promise.all(children.map((child) => child.status));
  }
});
