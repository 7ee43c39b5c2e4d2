import assert from "node:assert/strict";
import { mayDelegate, readDelegationDepth } from "../../src/delegation/delegation_depth.ts";

Deno.test("readDelegationDepth() reads digits; absent is 0, anything else is infinitely deep", () => {
  assert.equal(readDelegationDepth(undefined), 0);
  assert.equal(readDelegationDepth(""), 0);
  assert.equal(readDelegationDepth("0"), 0);
  assert.equal(readDelegationDepth("3"), 3);
  for (const bad of ["-1", "1.5", "x", " 1", "9999999"]) {
    assert.equal(readDelegationDepth(bad), Infinity, bad);
  }
});

Deno.test("mayDelegate() needs agents and a depth below the limit", () => {
  const agents = { worker: {} };
  assert.equal(mayDelegate({ agents, maxDelegationDepth: 1 }, 0), true);
  assert.equal(mayDelegate({ agents, maxDelegationDepth: 1 }, 1), false);
  assert.equal(mayDelegate({ agents, maxDelegationDepth: 2 }, 1), true);
  assert.equal(mayDelegate({ agents, maxDelegationDepth: 0 }, 0), false);
  assert.equal(mayDelegate({ agents: {}, maxDelegationDepth: 5 }, 0), false);
  assert.equal(mayDelegate({ agents, maxDelegationDepth: 5 }, Infinity), false);
});
