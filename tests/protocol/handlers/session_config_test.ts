/**
 * `session/set_config_option` and `session/set_mode` on a session not yet written to the store:
 * the change waits for the write (its record and its update go out together, after it).
 *
 * @module
 */
import assert from "node:assert/strict";
import type { ConnectionContext } from "../../../src/protocol/connection_context.ts";
import { setConfigOption, setMode } from "../../../src/protocol/handlers/session_config.ts";
import type { Session } from "../../../src/session/session.ts";

/** A connection whose one session is being written until `written` settles; it logs changes. */
function pendingSession() {
  const { promise: created, resolve, reject } = Promise.withResolvers<void>();
  created.catch(() => {});
  const changes: string[] = [];
  let pending = true;
  created.then(() => pending = false, () => {});
  const session = {
    get created(): Promise<void> | undefined {
      return pending ? created : undefined;
    },
    setConfigOption(configId: string, value: unknown) {
      changes.push(`${configId}=${String(value)}`);
      return [];
    },
    setMode(modeId: string) {
      changes.push(`mode=${modeId}`);
    },
  } as unknown as Session;
  const connection = { requireSession: () => session } as unknown as ConnectionContext;
  return { connection, changes, resolve, reject };
}

Deno.test("a config change or a mode change waits until its new session is written", async () => {
  const { connection, changes, resolve } = pendingSession();
  const option = setConfigOption(connection, { sessionId: "s", configId: "mode", value: "auto" });
  const mode = setMode(connection, { sessionId: "s", modeId: "read-only" });
  await Promise.resolve();
  assert.deepEqual(changes, [], "nothing applied before the session is written");
  resolve();
  assert.deepEqual(await option, { configOptions: [] });
  assert.deepEqual(await mode, {});
  assert.deepEqual(changes, ["mode=auto", "mode=read-only"], "in the order they were sent");
  // Once written, a change applies at once (no promise).
  assert.deepEqual(setMode(connection, { sessionId: "s", modeId: "ask" }), {});
  assert.deepEqual(changes.at(-1), "mode=ask");
});

Deno.test("a config change fails with the store's error when its new session cannot be written", async () => {
  const { connection, changes, reject } = pendingSession();
  const option = setConfigOption(connection, { sessionId: "s", configId: "mode", value: "auto" });
  reject(new Error("disk full"));
  await assert.rejects(Promise.resolve(option), /disk full/);
  assert.deepEqual(changes, []);
});
