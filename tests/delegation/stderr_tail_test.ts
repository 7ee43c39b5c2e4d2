import assert from "node:assert/strict";
import {
  redactSecrets,
  STDERR_TAIL_MAX_BYTES,
  STDERR_TAIL_MAX_LINES,
  stderrTail,
} from "../../src/delegation/stderr_tail.ts";

const bytes = (text: string): number => new TextEncoder().encode(text).length;

Deno.test("stderrTail() keeps short clean text as it is", () => {
  assert.equal(
    stderrTail("Error: cannot open config\n  at main\n"),
    "Error: cannot open config\n  at main",
  );
  assert.equal(stderrTail(""), "");
  assert.equal(stderrTail("\n\n  \n"), "");
});

Deno.test("stderrTail() keeps the last 20 lines and at most 2 KiB, marking the cut", () => {
  const lines = Array.from({ length: 100 }, (_, i) => `line ${i}`);
  const tail = stderrTail(lines.join("\n"));
  assert.equal(tail, `…${lines.slice(-STDERR_TAIL_MAX_LINES).join("\n")}`);
  const noise = "x".repeat(10 * 1024);
  const cut = stderrTail(`${noise}\nlast line`);
  assert.ok(bytes(cut) <= STDERR_TAIL_MAX_BYTES, String(bytes(cut)));
  assert.ok(cut.startsWith("…"));
  assert.ok(cut.endsWith("\nlast line"));
  const custom = stderrTail("a\nb\nc\nd", { maxLines: 2, maxBytes: 100 });
  assert.equal(custom, "…c\nd");
});

Deno.test("stderrTail() never cuts a multi-byte character in two", () => {
  for (const char of ["é", "€", "😀"]) {
    const tail = stderrTail(char.repeat(3000));
    assert.ok(bytes(tail) <= STDERR_TAIL_MAX_BYTES);
    assert.equal(tail.replace(/^…/, "").replaceAll(char, ""), "", char);
    assert.ok(!/[\ud800-\udfff]/.test(tail.replaceAll(char, "")), char);
  }
  // A lone surrogate (a pair the stream tail cut) is dropped.
  assert.equal(stderrTail("\udc00ok\ud83d"), "ok");
});

Deno.test("stderrTail() strips ANSI escapes and control characters", () => {
  const text = "\x1b[1;31mred\x1b[0m \x1b]0;title\x07\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ " +
    "\x9b2Kbell\x07 nul\x00 del\x7f bidi\u202eevil\u202c zero\u200bwidth tab\tkept";
  assert.equal(stderrTail(text), "red link bell nul del bidievil zerowidth tab\tkept");
  assert.equal(
    stderrTail("progress 10%\rprogress 100%\r\ndone"),
    "progress 10%\nprogress 100%\ndone",
  );
});

Deno.test("stderrTail() redacts keys, Bearer tokens, secret assignments and URL credentials", () => {
  const text = [
    "OPENAI_API_KEY=sk-test-abcdefghijklmnop",
    "using key sk-ant-api03-ZZZZZZZZZZZZ for anthropic",
    "Authorization: Bearer eyJhbGciOi.payload.sig",
    "github ghp_0123456789abcdefghij aws AKIAABCDEFGHIJKLMNOP slack xoxb-1234567890-abc",
    "MY_SERVICE_TOKEN: hunter2hunter2",
    'config {"api_key": "plain-value"}',
    "fetch https://user:pw@api.example.com/v1?token=t0k3n&page=2 failed",
  ].join("\n");
  const tail = stderrTail(text);
  for (
    const secret of [
      "sk-test-abcdefghijklmnop",
      "sk-ant-api03",
      "eyJhbGciOi",
      "ghp_0123",
      "AKIAABCD",
      "xoxb-1234",
      "hunter2",
      "plain-value",
      "user:pw",
      "t0k3n",
    ]
  ) {
    assert.ok(!tail.includes(secret), `${secret} in ${tail}`);
  }
  assert.match(tail, /^OPENAI_API_KEY=\[redacted\]$/m);
  assert.match(tail, /Bearer \[redacted\]/);
  assert.match(tail, /https:\/\/api\.example\.com\/v1\?token=\[redacted\]&page=2 failed/);
});

Deno.test("stderrTail() redacts the given secrets however they look, even split by escapes", () => {
  const secrets = ["opaque-key-1", "tok"];
  const tail = stderrTail("key opaque-\x1b[0mkey-1 and tok stays (too short)", { secrets });
  assert.equal(tail, "key [redacted] and tok stays (too short)");
  // A longer secret is not half-replaced by a shorter one it contains.
  assert.equal(stderrTail("abcdefgh", { secrets: ["abcd", "abcdefgh"] }), "[redacted]");
});

Deno.test("stderrTail() drops the partial first line of a truncated tail", () => {
  // The tail starts in the middle of a key: its end must not show.
  assert.equal(stderrTail("3456789-end-of-key\nreal line", { truncated: true }), "…real line");
  const oneLine = stderrTail(`${"k".repeat(100)}${"y".repeat(300)}`, { truncated: true });
  assert.ok(!oneLine.includes("k"), oneLine);
});

Deno.test("redactSecrets() redacts without cutting or stripping", () => {
  assert.equal(
    redactSecrets("line one sk-abcdefghijkl\nkey VALUE-123", ["VALUE-123"]),
    "line one [redacted]\nkey [redacted]",
  );
});
