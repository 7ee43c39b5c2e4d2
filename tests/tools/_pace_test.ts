import assert from "node:assert/strict";
import { Pacer, sortPaced } from "../../src/tools/_pace.ts";

function randomNames(count: number, seed: number): string[] {
  let state = seed;
  const names: string[] = [];
  for (let index = 0; index < count; index++) {
    state = (state * 1_103_515_245 + 12_345) & 0x7fffffff;
    names.push(`n${state % 997}-${(state >> 8) % 31}`);
  }
  return names;
}

Deno.test("sortPaced() sorts like Array.prototype.sort in code-unit order, duplicates kept", async () => {
  for (const count of [0, 1, 2, 255, 256, 257, 511, 513, 1000, 5000]) {
    const names = randomNames(count, count + 1);
    const expected = [...names].sort();
    const items = names.map((name) => ({ name }));
    const done = await sortPaced(
      items,
      (item) => item.name,
      new Pacer(new AbortController().signal),
    );
    assert.equal(done, true);
    assert.deepEqual(items.map((item) => item.name), expected, `${count} items`);
  }
});

Deno.test("sortPaced() stops when the signal aborts", async () => {
  const controller = new AbortController();
  controller.abort();
  const items = randomNames(300_000, 7);
  assert.equal(await sortPaced(items, (item) => item, new Pacer(controller.signal)), false);
});
