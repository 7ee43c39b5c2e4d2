/**
 * The title from the first prompt, and the system prompt cache.
 *
 * @module
 */
import assert from "node:assert/strict";
import type { SessionOutput } from "../../src/session/outbox.ts";
import { SessionTitle } from "../../src/session/session_title.ts";
import { SystemPromptCache } from "../../src/session/system_prompt_cache.ts";

function output(): { output: SessionOutput; calls: unknown[] } {
  const calls: unknown[] = [];
  return {
    calls,
    output: {
      record: (events, commit, when) => calls.push({ events, commit, when }),
      send: (update) => {
        calls.push(update);
        return undefined;
      },
      flush: () => {},
    },
  };
}

Deno.test("SessionTitle.announce() takes the first non-blank line once, records and sends it", () => {
  const { output: out, calls } = output();
  const title = new SessionTitle(undefined, out, () => 0);
  assert.equal(title.announce([{ type: "text", text: "  \n" }]), false);
  assert.equal(title.announce([{ type: "text", text: "\n  Fix the build  \nmore" }]), true);
  assert.equal(title.title, "Fix the build");
  assert.deepEqual(calls, [
    { events: [{ type: "title", title: "Fix the build" }], commit: false, when: "later" },
    {
      sessionUpdate: "session_info_update",
      title: "Fix the build",
      updatedAt: "1970-01-01T00:00:00.000Z",
    },
  ]);
  assert.equal(title.announce([{ type: "text", text: "Another" }]), false);
  assert.equal(
    new SessionTitle("Kept", out, () => 0).announce([{ type: "text", text: "x" }]),
    false,
  );
});

Deno.test("SessionTitle.announce() cuts long lines to 80 characters", () => {
  const title = new SessionTitle(undefined, output().output, () => 0);
  title.announce([{ type: "text", text: "x".repeat(100) }]);
  assert.equal(title.title, `${"x".repeat(79)}…`);
});

Deno.test("SystemPromptCache.get() builds once per model and day", () => {
  let now = Date.UTC(2026, 0, 1, 10);
  const cache = new SystemPromptCache({
    roots: ["/w", "/x"],
    instructions: "Be kind",
    now: () => now,
  });
  const first = cache.get("Model A");
  assert.match(first, /running as the Model A model/);
  assert.match(first, /Additional workspace roots: \/x/);
  assert.match(first, /Today's date: 2026-01-01/);
  assert.match(first, /Be kind/);
  now += 3_600_000;
  assert.equal(cache.get("Model A"), first);
  assert.notEqual(cache.get("Model B"), first);
  now += 86_400_000;
  assert.match(cache.get("Model B"), /Today's date: 2026-01-02/);
});
