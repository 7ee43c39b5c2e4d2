import assert from "node:assert/strict";
import { SessionNotFoundError } from "../../src/util/session_not_found_error.ts";

Deno.test("SessionNotFoundError names the session and keeps its id", () => {
  const error = new SessionNotFoundError("abc-1");
  assert.ok(error instanceof Error);
  assert.equal(error.name, "SessionNotFoundError");
  assert.equal(error.message, 'Cannot find session "abc-1"');
  assert.equal(error.sessionId, "abc-1");
});
