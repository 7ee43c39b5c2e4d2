import assert from "node:assert/strict";
import { buildSystemPrompt, sandboxLines } from "../../src/agent/system_prompt.ts";
import { SystemPromptCache } from "../../src/session/system_prompt_cache.ts";

Deno.test("buildSystemPrompt() states the sandbox of commands when given one", () => {
  const date = new Date(0);
  const plain = buildSystemPrompt({ roots: ["/w"], model: "m", date });
  assert.doesNotMatch(plain, /sandbox/);
  const confined = buildSystemPrompt({
    roots: ["/w"],
    model: "m",
    date,
    sandbox: { level: "workspace-write", network: false },
  });
  assert.match(
    confined,
    /run in a sandbox workspace-write: writes outside the workspace and network access are refused/,
  );
  assert.deepEqual(sandboxLines({ level: "off", network: false }), [
    "Commands (run_command) run without a sandbox.",
  ]);
  assert.match(
    sandboxLines({ level: "read-only", network: true })[0] ?? "",
    /private \/tmp are refused/,
  );
});

Deno.test("SystemPromptCache rebuilds the prompt when the sandbox level changes", () => {
  const cache = new SystemPromptCache({ roots: ["/w"], now: () => 0 });
  const wide = cache.get("m", { sandbox: { level: "workspace-write", network: false } });
  const tight = cache.get("m", { sandbox: { level: "read-only", network: false } });
  assert.notEqual(wide, tight);
  assert.match(tight, /sandbox read-only/);
});
