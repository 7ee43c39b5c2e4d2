import assert from "node:assert/strict";
import { locateJsonError, parseJsonText } from "../../src/config/json_text.ts";

Deno.test("parseJsonText() returns the value of valid JSON", () => {
  assert.deepEqual(parseJsonText('{"a": [1, "x", null, true]}', "f.json"), {
    a: [1, "x", null, true],
  });
});

Deno.test("parseJsonText() names the file, the line and the column of a syntax error", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ['[\n  {"text": "hi",}\n]', "line 2, column 17: expected a string key"],
    ['{"a":}', "line 1, column 6: expected a value"],
    ["[1,]", "line 1, column 4: expected a value"],
    ["[1 2]", 'line 1, column 4: expected "," or "]"'],
    ['{"a" 1}', 'line 1, column 6: expected ":" after the key'],
    ['[\n"abc', "line 2, column 5: unterminated string"],
    ['["\\x"]', "line 1, column 3: bad escape in string"],
    ["[1]x", "line 1, column 4: expected the end of the text"],
    ["", "line 1, column 1: unexpected end of text, expected a value"],
    ['{\n\n  "a": tru\n}', "line 3, column 8: expected a value"],
  ];
  for (const [text, where] of cases) {
    assert.throws(() => parseJsonText(text, "/tmp/script.json"), (error: unknown) => {
      assert.ok(error instanceof SyntaxError);
      assert.equal(error.message, `Cannot parse "/tmp/script.json" as JSON: ${where}`);
      return true;
    }, JSON.stringify(text));
  }
});

Deno.test("locateJsonError() accepts everything JSON.parse accepts", () => {
  for (
    const text of [
      "0",
      "-1.5e+10",
      '"\\u00e9\\n"',
      ' { "a" : [ ] , "b" : { } } ',
      "[[[[1]]]]",
      JSON.stringify({ deep: { list: [1, 2, { x: 'y"z' }] } }),
    ]
  ) {
    JSON.parse(text);
    assert.equal(locateJsonError(text), undefined, text);
  }
});
