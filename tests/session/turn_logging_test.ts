/**
 * At `debug` a turn logs the prompt, its tool calls, permission decisions and its end, with the
 * session id and timings; prompt content only at `debug` (issue 7, defect 9).
 *
 * @module
 */
import assert from "node:assert/strict";
import { startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

Deno.test("a turn logs its prompt, tool calls, permission decisions and end", async () => {
  await using temp = await tempDir("acp-harness-logs-");
  const cwd = temp.path;
  const server = startServer({
    config: { model: "scripted", mode: "ask" },
    script: [
      {
        toolCalls: [
          { id: "r1", name: "list_directory", arguments: { path: "." } },
          { id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x" } },
        ],
      },
      { text: "done" },
    ],
  });
  try {
    server.client.handlers.set("session/request_permission", () => ({
      outcome: { outcome: "selected", optionId: "reject_once" },
    }));
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd);
    assert.equal(await server.client.prompt(sessionId, "secret plans"), "end_turn");
    const lines = server.logs.map((line) => line.trimEnd());
    const find = (pattern: RegExp): string => {
      const line = lines.find((candidate) => pattern.test(candidate));
      assert.ok(line, `no log line matches ${pattern}:\n${lines.join("\n")}`);
      assert.ok(line.includes(sessionId), `no session id in ${line}`);
      return line;
    };
    assert.match(find(/^acp-harness info: prompt started /), /"model":"scripted"/);
    find(/^acp-harness debug: prompt content .*secret plans/);
    find(/^acp-harness debug: permission: allowed by policy .*"tool":"list_directory"/);
    assert.match(
      find(/^acp-harness info: permission: answered .*"tool":"write_file"/),
      /"answer":"reject_once"/,
    );
    // One answer, one line (the protocol's round trip logs only failures).
    assert.equal(lines.filter((line) => /permission:? answered/.test(line)).length, 1);
    assert.match(find(/^acp-harness info: permission: answered /), /"ms":\d+/);
    assert.match(find(/^acp-harness info: tool call ended .*"toolCallId":"r1"/), /"ms":\d+/);
    assert.match(find(/^acp-harness info: tool call ended .*"toolCallId":"w1"/), /"failed"/);
    assert.match(find(/^acp-harness info: prompt ended /), /"stopReason":"end_turn","ms":\d+/);
    const aboveDebug = lines.filter((line) => !line.startsWith("acp-harness debug:"));
    assert.equal(aboveDebug.some((line) => line.includes("secret plans")), false);
  } finally {
    await server.disconnect();
  }
});
