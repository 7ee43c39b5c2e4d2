/**
 * The session lifecycle: the transition table move by move (every allowed move, every refused
 * one), and the states a session, its prompt slot and its manager go through.
 *
 * @module
 */
import assert from "node:assert/strict";
import { PromptSlot } from "../../src/session/prompt_slot.ts";
import {
  nextSessionState,
  SESSION_STATES,
  SESSION_TRANSITIONS,
  SessionLifecycle,
  type SessionState,
  SessionStateError,
  SessionTransitionError,
} from "../../src/session/session_state.ts";
import { gate } from "./_fakes.ts";

/** The moves the lifecycle allows, written out once more by hand. */
const ALLOWED: ReadonlyArray<readonly [SessionState, SessionState]> = [
  ["creating", "open"],
  ["creating", "closing"],
  ["loading", "open"],
  ["loading", "closing"],
  ["open", "prompting"],
  ["open", "closing"],
  ["prompting", "open"],
  ["prompting", "closing"],
  ["closing", "closed"],
];

const allowed = (from: SessionState, to: SessionState): boolean =>
  ALLOWED.some(([a, b]) => a === from && b === to);

Deno.test("SESSION_TRANSITIONS is the lifecycle's table, over every state", () => {
  assert.deepEqual(Object.keys(SESSION_TRANSITIONS).sort(), [...SESSION_STATES].sort());
  const table = SESSION_STATES.flatMap((from) =>
    SESSION_TRANSITIONS[from].map((to) => [from, to] as const)
  );
  assert.deepEqual(table, ALLOWED);
});

Deno.test("nextSessionState() allows every move of the table", () => {
  for (const [from, to] of ALLOWED) {
    assert.equal(nextSessionState("s1", from, to), to, `${from} → ${to}`);
  }
});

Deno.test("nextSessionState() refuses every other move, naming both states", () => {
  let refused = 0;
  for (const from of SESSION_STATES) {
    for (const to of SESSION_STATES) {
      if (allowed(from, to)) continue;
      refused++;
      assert.throws(
        () => nextSessionState("s1", from, to),
        (error: unknown) =>
          error instanceof SessionTransitionError && error.from === from && error.to === to &&
          error.message === `Cannot move session s1 from ${from} to ${to}`,
        `${from} → ${to}`,
      );
    }
  }
  assert.equal(refused, SESSION_STATES.length ** 2 - ALLOWED.length);
});

Deno.test("SessionLifecycle.to() moves through the table and keeps the state on a refusal", () => {
  const lifecycle = new SessionLifecycle("s1", "loading");
  assert.equal(lifecycle.state, "loading");
  assert.throws(() => lifecycle.to("prompting"), SessionTransitionError);
  assert.equal(lifecycle.state, "loading");
  lifecycle.to("open");
  assert.equal(lifecycle.ending, false);
  lifecycle.to("closing");
  assert.equal(lifecycle.ending, true);
  lifecycle.to("closed");
  assert.equal(lifecycle.ending, true);
  assert.throws(
    () => lifecycle.to("open"),
    /^SessionTransitionError: Cannot move session s1 from closed to open$/,
  );
  assert.equal(new SessionLifecycle("s2").state, "open");
});

Deno.test("PromptSlot moves the session open → prompting → open, and into closing", async () => {
  const lifecycle = new SessionLifecycle("s1");
  const slot = new PromptSlot("s1", lifecycle);
  const release = gate();
  const turn = slot.take(new AbortController().signal, () => release.wait);
  assert.equal(lifecycle.state, "prompting");
  assert.throws(() => slot.assertAdmits(), SessionStateError);
  release.open();
  await turn;
  assert.equal(lifecycle.state, "open");

  const running = slot.take(
    new AbortController().signal,
    (controller) =>
      new Promise<void>((resolve) => controller.signal.addEventListener("abort", () => resolve())),
  );
  const closing = slot.close();
  assert.equal(lifecycle.state, "closing", "a close during a turn moves on at once");
  await running;
  await closing;
  assert.equal(lifecycle.state, "closing", "the turn's end does not move a closing session back");
  await slot.close();
  assert.equal(lifecycle.state, "closing", "a second close changes nothing");
  assert.throws(() => slot.assertOpen(), /^SessionStateError: session s1 is closing$/);
});

Deno.test("PromptSlot refuses a turn in a session still being created, as a server defect", () => {
  const slot = new PromptSlot("s1", new SessionLifecycle("s1", "creating"));
  assert.throws(
    () => slot.take(new AbortController().signal, () => Promise.resolve()),
    SessionTransitionError,
  );
});
