import assert from "node:assert/strict";
import { createLogger, dropEntry, LOG_LEVELS } from "../../src/log/logger.ts";
import { withFields } from "../../src/server/connection_logger.ts";

Deno.test("withFields adds its fields after each entry's own, at every level written", () => {
  const lines: string[] = [];
  const log = withFields(createLogger("debug", (line) => lines.push(line)), { connectionId: "c1" });
  for (const level of LOG_LEVELS) log[level]("entry", { sessionId: "s" });
  log.info("bare");
  assert.deepEqual(lines, [
    ...LOG_LEVELS.map((level) =>
      `acp-harness ${level}: entry {"sessionId":"s","connectionId":"c1"}\n`
    ),
    'acp-harness info: bare {"connectionId":"c1"}\n',
  ]);
});

Deno.test("withFields drops what its logger drops without reading the entry", () => {
  const lines: string[] = [];
  const log = withFields(createLogger("warn", (line) => lines.push(line)), { connectionId: "c1" });
  assert.equal(log.info, dropEntry);
  assert.equal(log.debug, dropEntry);
  const fields = {
    get sessionId(): string {
      throw new Error("a dropped entry's fields were read");
    },
  };
  log.info("skipped", fields);
  log.debug("skipped", fields);
  log.warn("kept");
  assert.deepEqual(lines, ['acp-harness warn: kept {"connectionId":"c1"}\n']);
});
