import assert from "node:assert/strict";
import { isRecord, parseJson } from "../../src/util/json.ts";

Deno.test("isRecord() accepts plain objects only", () => {
  for (const [index, value] of [{}, { a: 1 }, Object.create(null), new Map()].entries()) {
    assert.equal(isRecord(value), true, `case ${index}`);
  }
  for (const value of [null, undefined, [], [1], "x", 1, true, () => {}]) {
    assert.equal(isRecord(value), false, String(value));
  }
});

Deno.test("parseJson() parses JSON and gives undefined for anything else", () => {
  assert.deepEqual(parseJson('{"a":[1,"b"]}'), { a: [1, "b"] });
  assert.equal(parseJson("null"), null);
  assert.equal(parseJson(" 3 "), 3);
  for (const text of ["", "{", "not json", "{'a':1}", '{"a":1}x']) {
    assert.equal(parseJson(text), undefined, text);
  }
});
