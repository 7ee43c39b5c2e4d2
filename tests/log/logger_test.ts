import assert from "node:assert/strict";
import {
  createLogger,
  dropEntry,
  LOG_LEVELS,
  type LogLevel,
  nullLogger,
} from "../../src/log/logger.ts";

function capture(level: LogLevel): { lines: string[]; log: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  return { lines, log: createLogger(level, (line) => lines.push(line)) };
}

function logAll(log: ReturnType<typeof createLogger>): void {
  log.error("e");
  log.warn("w");
  log.info("i");
  log.debug("d");
}

Deno.test("LOG_LEVELS lists the levels most severe first", () => {
  assert.deepEqual(LOG_LEVELS, ["error", "warn", "info", "debug"]);
});

Deno.test("createLogger() writes only entries at or above its level", () => {
  const expected: Record<LogLevel, string[]> = {
    error: ["e"],
    warn: ["e", "w"],
    info: ["e", "w", "i"],
    debug: ["e", "w", "i", "d"],
  };
  for (const level of LOG_LEVELS) {
    const { lines, log } = capture(level);
    logAll(log);
    assert.deepEqual(
      lines.map((line) => line.replace(/^acp-harness \w+: (.*)\n$/, "$1")),
      expected[level],
      level,
    );
  }
});

Deno.test("createLogger() formats one line per entry with the level", () => {
  const { lines, log } = capture("debug");
  logAll(log);
  assert.deepEqual(lines, [
    "acp-harness error: e\n",
    "acp-harness warn: w\n",
    "acp-harness info: i\n",
    "acp-harness debug: d\n",
  ]);
});

Deno.test("createLogger() appends fields as compact JSON", () => {
  const { lines, log } = capture("info");
  log.info("session created", { sessionId: "s1", count: 2, nested: { ok: true }, list: [1] });
  assert.deepEqual(lines, [
    'acp-harness info: session created {"sessionId":"s1","count":2,"nested":{"ok":true},"list":[1]}\n',
  ]);
});

Deno.test("createLogger() omits empty or missing fields", () => {
  const { lines, log } = capture("info");
  log.warn("plain", {});
  log.warn("none");
  assert.deepEqual(lines, ["acp-harness warn: plain\n", "acp-harness warn: none\n"]);
});

Deno.test("createLogger() renders Error values in fields as name and message", () => {
  const { lines, log } = capture("error");
  class CustomError extends Error {
    override name = "CustomError";
  }
  log.error("failed", {
    error: new TypeError("bad input"),
    deep: { cause: new CustomError("inner") },
  });
  assert.deepEqual(lines, [
    'acp-harness error: failed {"error":"TypeError: bad input","deep":{"cause":"CustomError: inner"}}\n',
  ]);
});

Deno.test("createLogger() still writes the message when fields cannot be serialized", () => {
  const { lines, log } = capture("warn");
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  log.warn("loop", { cyclic });
  log.warn("big", { n: 10n });
  assert.deepEqual(lines, [
    "acp-harness warn: loop [unserializable fields]\n",
    "acp-harness warn: big [unserializable fields]\n",
  ]);
});

Deno.test("createLogger() does not call the writer for filtered entries", () => {
  let calls = 0;
  const log = createLogger("error", () => calls++);
  log.debug("x", { a: 1 });
  log.info("x");
  log.warn("x");
  assert.equal(calls, 0);
  log.error("x");
  assert.equal(calls, 1);
});

Deno.test("nullLogger drops everything without throwing", () => {
  for (const level of LOG_LEVELS) {
    assert.equal(nullLogger[level]("message", { error: new Error("x") }), undefined);
    assert.equal(nullLogger[level]("message"), undefined);
  }
});

Deno.test("createLogger() never writes the values of credential fields, at any depth", () => {
  const { lines, log } = capture("debug");
  log.debug("request", {
    url: "https://api.example.com/v1",
    headers: { Authorization: "Bearer sk-1", "x-api-key": "sk-2", "content-type": "json" },
    apiKey: "sk-3",
    nested: [{ token: "sk-4", password: "pw", api_key: "sk-5" }],
  });
  const [line] = lines;
  assert.ok(line);
  assert.doesNotMatch(line, /sk-\d|"pw"/);
  assert.deepEqual(JSON.parse(line.slice(line.indexOf("{"))), {
    url: "https://api.example.com/v1",
    headers: { Authorization: "[redacted]", "x-api-key": "[redacted]", "content-type": "json" },
    apiKey: "[redacted]",
    nested: [{ token: "[redacted]", password: "[redacted]", api_key: "[redacted]" }],
  });
});

Deno.test("createLogger() gives the levels it does not write the shared no-op", () => {
  const log = createLogger("warn", () => {
    throw new Error("nothing is written below warn");
  });
  assert.equal(log.info, dropEntry);
  assert.equal(log.debug, dropEntry);
  assert.notEqual(log.warn, dropEntry);
  assert.equal(nullLogger.error, dropEntry);
});

Deno.test("createLogger() with timestamps starts each text line with the ISO time", () => {
  const lines: string[] = [];
  const log = createLogger("info", (line) => lines.push(line), {
    timestamps: true,
    now: () => Date.UTC(2026, 11, 2, 6, 30, 0, 5),
  });
  log.info("up", { port: 7 });
  assert.deepEqual(lines, ['2026-12-02T06:30:00.005Z acp-harness info: up {"port":7}\n']);
});

Deno.test("createLogger() in json writes one object a line, fields redacted and kept apart", () => {
  const lines: string[] = [];
  const log = createLogger("debug", (line) => lines.push(line), { format: "json", now: () => 0 });
  log.warn("failed", { error: new TypeError("bad"), token: "sk-1", message: "own", n: 1 });
  log.debug("bare");
  const cyclic: Record<string, unknown> = {};
  cyclic["self"] = cyclic;
  log.error("loop", { cyclic });
  assert.equal(lines.length, 3);
  assert.ok(lines.every((line) => line.endsWith("}\n") && !line.slice(0, -1).includes("\n")));
  assert.deepEqual(lines.map((line) => JSON.parse(line)), [
    {
      time: "1970-01-01T00:00:00.000Z",
      level: "warn",
      message: "failed",
      error: "TypeError: bad",
      token: "[redacted]",
      _message: "own",
      n: 1,
    },
    { time: "1970-01-01T00:00:00.000Z", level: "debug", message: "bare" },
    {
      time: "1970-01-01T00:00:00.000Z",
      level: "error",
      message: "loop",
      unserializableFields: true,
    },
  ]);
});

Deno.test("createLogger() redacts the credentials of URLs in strings and errors", () => {
  const { lines, log } = capture("debug");
  log.warn("MCP server did not start", {
    cause: "fetch http://u:SECRETPASS@127.0.0.1:1/mcp?token=SECRETQ failed",
    error: new TypeError("error sending request for url (https://a:SECRETB@[::1]:9/?key=SECRETK)"),
    count: 2,
  });
  const [line] = lines;
  assert.ok(line);
  assert.doesNotMatch(line, /SECRET/);
  assert.deepEqual(JSON.parse(line.slice(line.indexOf("{"))), {
    cause: "fetch http://127.0.0.1:1/mcp?token=[redacted] failed",
    error: "TypeError: error sending request for url (https://[::1]:9/?key=[redacted]",
    count: 2,
  });
});
