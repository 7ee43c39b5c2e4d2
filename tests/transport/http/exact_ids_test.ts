import assert from "node:assert/strict";
import {
  exactIdText,
  NON_FINITE_ID_ANSWER,
  restoreExactIds,
} from "../../../src/transport/http/exact_ids.ts";
import { topLevelNumber } from "../../../src/transport/json_number.ts";

/** The id after a round trip: read, parsed, answered, serialized, restored. */
function roundTrip(text: string): string {
  const read = exactIdText(text);
  assert(typeof read === "string");
  const { id } = JSON.parse(read);
  return restoreExactIds(JSON.stringify({ jsonrpc: "2.0", id, result: null }));
}

Deno.test("exactIdText() keeps ids a number cannot hold, as written", () => {
  for (const id of ["9007199254740993", "-123456789012345678901", "1.50", "2e3", "12.5e-400"]) {
    const text = `{"jsonrpc":"2.0","method":"x","params":{"id":1},"id" : ${id}}`;
    assert.equal(roundTrip(text), `{"jsonrpc":"2.0","id":${id},"result":null}`);
  }
});

Deno.test("exactIdText() leaves other texts as they are", () => {
  for (
    const text of [
      '{"jsonrpc":"2.0","id":7,"method":"x"}',
      '{"jsonrpc":"2.0","id":"9007199254740993","method":"x"}',
      '{"jsonrpc":"2.0","id":9007199254740993,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"method":"x","params":{"n":12345678901234567890}}',
      "not json: 12345678901234567890",
    ]
  ) {
    assert.equal(exactIdText(text), text);
  }
});

Deno.test("exactIdText() refuses a request id that is not finite", () => {
  for (const id of ["1e400", "-1e400", "9".repeat(400)]) {
    assert.deepEqual(exactIdText(`{"jsonrpc":"2.0","id":${id},"method":"x"}`), {
      refusal: NON_FINITE_ID_ANSWER,
    });
  }
});

Deno.test("restoreExactIds() does not turn a forged placeholder into a number", () => {
  const forged = JSON.stringify({ jsonrpc: "2.0", id: "\u0000acp-harness-exact-id:1", result: 0 });
  assert.equal(restoreExactIds(forged), forged);
});

Deno.test("topLevelNumber() reads a top-level number of any length, the last one winning", () => {
  const long = "1." + "0".repeat(1000) + "1";
  assert.equal(topLevelNumber(`{"a":{"id":1},"id":2,"id":${long}}`, "id"), long);
  assert.equal(topLevelNumber('{"a":{"id":1}}', "id"), undefined);
  assert.equal(topLevelNumber('{"id":"1"}', "id"), undefined);
});
