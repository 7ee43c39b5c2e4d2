/**
 * Issue 7, defect 7: a title appended while an earlier index line of the same session is being
 * written must still reach `index.jsonl`, so that other processes (and later ones) list it.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { AppendFileOptions } from "../../src/host/host.ts";
import { ClockHost, header, sessionId, tempStore } from "./_helpers.ts";

/** A clock host whose next append to `index.jsonl` waits until the test lets it go. */
class GatedHost extends ClockHost {
  #gate: { entered: () => void; open: Promise<void> } | undefined;

  /** Holds the next index append; resolves once it has started, with the function that ends it. */
  holdNextIndexAppend(): Promise<() => void> {
    let release!: () => void;
    const open = new Promise<void>((resolve) => release = resolve);
    return new Promise((entered) => {
      this.#gate = { entered: () => entered(release), open };
    });
  }

  override async appendFile(
    path: string,
    data: string | Uint8Array,
    options: AppendFileOptions,
  ): Promise<void> {
    const gate = this.#gate;
    if (gate !== undefined && path.endsWith("/index.jsonl")) {
      this.#gate = undefined;
      gate.entered();
      await gate.open;
    }
    return await super.appendFile(path, data, options);
  }
}

Deno.test("JsonlSessionStore: a title appended while an index line is being written reaches the index", async () => {
  await using temp = await tempStore();
  const id = sessionId(1);
  // Process A creates the session and exits.
  const a = temp.store;
  const leaseA = await a.acquire(id);
  await a.create(header(id, temp.host));
  await leaseA.release();
  // Process C is already running and has read the index.
  const c = temp.open();
  assert.equal((await c.list({ limit: 5 })).sessions[0]?.title, undefined);

  // Process B resumes the session and prompts: the prompt's index line is being written when the
  // title event is appended (as a turn does: the title follows the admitted prompt at once).
  const host = new GatedHost();
  host.ms = temp.host.ms + 1_000;
  const b = temp.open({ host });
  const leaseB = await b.acquire(id);
  await b.load(id);
  const held = host.holdNextIndexAppend();
  const prompt = b.append(id, [{ type: "turn_start" }, {
    type: "user",
    messageId: "m1",
    content: [{ type: "text", text: "Fix the build" }],
  }], { sync: true });
  const release = await held;
  host.tick(5);
  const title = b.append(id, [{ type: "title", title: "Fix the build" }], { sync: false });
  release();
  await Promise.all([prompt, title]);

  assert.equal((await b.list({ limit: 5 })).sessions[0]?.title, "Fix the build", "B");
  assert.equal((await c.list({ limit: 5 })).sessions[0]?.title, "Fix the build", "C, B alive");
  await leaseB.release();
  assert.equal((await c.list({ limit: 5 })).sessions[0]?.title, "Fix the build", "C, B gone");
  const d = temp.open();
  assert.equal((await d.list({ limit: 5 })).sessions[0]?.title, "Fix the build", "D, B gone");
  assert.deepEqual(temp.warnings, []);
});
