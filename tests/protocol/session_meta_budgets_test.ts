import assert from "node:assert/strict";
import { RequestError } from "@agentclientprotocol/sdk";
import { sessionMeta } from "../../src/protocol/session_meta.ts";

const SERVER = { maxSteps: 50, maxToolCalls: 10, maxSessionTokens: 100_000 };

function rejects(budgets: unknown, pattern: RegExp): void {
  assert.throws(
    () => sessionMeta({ "acp-harness": { budgets } }, SERVER),
    (error: unknown) =>
      error instanceof RequestError && error.code === -32602 && pattern.test(error.message),
  );
}

Deno.test("sessionMeta() reads a client's lower budgets, times in ms", () => {
  const meta = sessionMeta({
    "acp-harness": {
      budgets: {
        maxSteps: 5,
        maxToolCalls: 10,
        turnTimeout: 1.5,
        maxSessionTokens: 2000,
        maxSessionCost: 0.25,
      },
    },
  }, SERVER);
  assert.deepEqual(meta.budgets, {
    maxSteps: 5,
    maxToolCalls: 10,
    turnTimeoutMs: 1500,
    maxSessionTokens: 2000,
    maxSessionCostUsd: 0.25,
  });
  assert.deepEqual(sessionMeta({ "acp-harness": { mcpStrict: true } }, SERVER), {
    mcpStrict: true,
  });
});

Deno.test("sessionMeta() refuses a budget above the server's with -32602 naming the field", () => {
  rejects({ maxToolCalls: 11 }, /budgets\.maxToolCalls: 11 is above the server's limit of 10/);
  rejects({ maxSteps: 51 }, /budgets\.maxSteps/);
  rejects({ maxSessionTokens: 100_001 }, /budgets\.maxSessionTokens/);
  // Without a server limit, any positive one lowers "none".
  assert.deepEqual(sessionMeta({ "acp-harness": { budgets: { turnTimeout: 600 } } }, SERVER), {
    budgets: { turnTimeoutMs: 600_000 },
  });
});

Deno.test("sessionMeta() refuses budgets that are not positive limits, or unknown keys", () => {
  rejects([], /budgets: must be an object/);
  rejects({ maxToolCalls: 0 }, /maxToolCalls: must be a positive integer, got 0/);
  rejects({ maxToolCalls: 1.5 }, /maxToolCalls: must be a positive integer/);
  rejects({ maxSessionCost: "1" }, /maxSessionCost: must be a positive number, got "1"/);
  rejects({ maxCost: 1 }, /budgets\.maxCost: not a budget/);
});
