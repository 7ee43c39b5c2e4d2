import assert from "node:assert/strict";
import type { StopReason as AcpStopReason } from "@agentclientprotocol/sdk";
import type { RecordedStopReason, StopReason } from "../../src/util/stop_reason.ts";

/** `true` only when `A` and `B` are the same union (checked by the type checker). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

Deno.test("StopReason is exactly the ACP schema's StopReason", () => {
  const same: Same<StopReason, AcpStopReason> = true;
  assert.equal(same, true);
});

Deno.test("RecordedStopReason adds interrupted and error to StopReason", () => {
  const same: Same<RecordedStopReason, AcpStopReason | "interrupted" | "error"> = true;
  assert.equal(same, true);
});
