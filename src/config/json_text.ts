/**
 * Parses the JSON files the CLI reads (config file, script) with errors that name the file and
 * the line and column, the same on every runtime (their `JSON.parse` messages differ, and
 * Bun's and some of V8's give no position).
 *
 * @module
 */

/** Where the first syntax error of a JSON text is. */
export interface JsonErrorPosition {
  /** Offset in UTF-16 code units. */
  readonly offset: number;
  /** 1-based line. */
  readonly line: number;
  /** 1-based column, in UTF-16 code units. */
  readonly column: number;
  /** What was expected there. */
  readonly reason: string;
}

/**
 * Parses a JSON text read from `file`.
 *
 * @example A syntax error names the file and the position
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseJsonText } from "./json_text.ts";
 * assert.throws(
 *   () => parseJsonText('[\n  {"text": "hi",}\n]', "steps.json"),
 *   { message: 'Cannot parse "steps.json" as JSON: line 2, column 17: expected a string key' },
 * );
 * ```
 *
 * @param text The file's content
 * @param file The file's path, for the message
 * @returns The parsed value
 * @throws {SyntaxError} `Cannot parse "<file>" as JSON: line L, column C: <what was expected>`
 */
export function parseJsonText(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    const position = locateJsonError(text);
    const where = position
      ? `line ${position.line}, column ${position.column}: ${position.reason}`
      : (error as Error).message;
    throw new SyntaxError(`Cannot parse "${file}" as JSON: ${where}`);
  }
}

/**
 * Finds the first syntax error of a JSON text (RFC 8259).
 *
 * @example Locating a missing value
 * ```ts
 * import assert from "node:assert/strict";
 * import { locateJsonError } from "./json_text.ts";
 * assert.deepEqual(locateJsonError('{"a":}'), {
 *   offset: 5, line: 1, column: 6, reason: "expected a value",
 * });
 * assert.equal(locateJsonError('{"a": 1}'), undefined);
 * ```
 *
 * @param text A JSON text
 * @returns The error's position, or `undefined` when the text is valid JSON
 */
export function locateJsonError(text: string): JsonErrorPosition | undefined {
  const failure = new JsonScanner(text).scan();
  if (failure === undefined) return undefined;
  const before = text.slice(0, failure.offset);
  const line = before.split("\n").length;
  const column = failure.offset - (before.lastIndexOf("\n") + 1) + 1;
  return { offset: failure.offset, line, column, reason: failure.reason };
}

interface Failure {
  readonly offset: number;
  readonly reason: string;
}

/** Thrown inside the scanner to stop at the first error. */
class Stop {
  constructor(readonly failure: Failure) {}
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
// Control characters must be escaped inside JSON strings.
// deno-lint-ignore no-control-regex
const STRING_CHARS = /(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*/y;

class JsonScanner {
  readonly #text: string;
  #at = 0;

  constructor(text: string) {
    this.#text = text;
  }

  scan(): Failure | undefined {
    try {
      this.#value();
      this.#space();
      if (this.#at < this.#text.length) this.#fail("expected the end of the text");
      return undefined;
    } catch (error) {
      if (error instanceof Stop) return error.failure;
      // Nesting too deep for the stack: report the position reached.
      return { offset: this.#at, reason: "nesting too deep" };
    }
  }

  #fail(reason: string): never {
    throw new Stop({ offset: this.#at, reason });
  }

  #space(): void {
    while (this.#at < this.#text.length && " \t\n\r".includes(this.#text[this.#at] as string)) {
      this.#at++;
    }
  }

  #value(): void {
    this.#space();
    const char = this.#text[this.#at];
    if (char === "{") return this.#object();
    if (char === "[") return this.#array();
    if (char === '"') return this.#string();
    for (const word of ["true", "false", "null"]) {
      if (this.#text.startsWith(word, this.#at)) {
        this.#at += word.length;
        return;
      }
    }
    NUMBER.lastIndex = this.#at;
    if (NUMBER.test(this.#text)) {
      this.#at = NUMBER.lastIndex;
      return;
    }
    this.#fail(
      char === undefined ? "unexpected end of text, expected a value" : "expected a value",
    );
  }

  #string(): void {
    this.#at++;
    STRING_CHARS.lastIndex = this.#at;
    STRING_CHARS.test(this.#text);
    this.#at = STRING_CHARS.lastIndex;
    const char = this.#text[this.#at];
    if (char === '"') {
      this.#at++;
      return;
    }
    if (char === undefined) this.#fail("unterminated string");
    this.#fail(char === "\\" ? "bad escape in string" : "control character in string");
  }

  #object(): void {
    this.#at++;
    this.#space();
    if (this.#text[this.#at] === "}") {
      this.#at++;
      return;
    }
    for (;;) {
      this.#space();
      if (this.#text[this.#at] !== '"') this.#fail("expected a string key");
      this.#string();
      this.#space();
      if (this.#text[this.#at] !== ":") this.#fail('expected ":" after the key');
      this.#at++;
      this.#value();
      this.#space();
      const char = this.#text[this.#at];
      if (char === "}") {
        this.#at++;
        return;
      }
      if (char !== ",") this.#fail('expected "," or "}"');
      this.#at++;
    }
  }

  #array(): void {
    this.#at++;
    this.#space();
    if (this.#text[this.#at] === "]") {
      this.#at++;
      return;
    }
    for (;;) {
      this.#value();
      this.#space();
      const char = this.#text[this.#at];
      if (char === "]") {
        this.#at++;
        return;
      }
      if (char !== ",") this.#fail('expected "," or "]"');
      this.#at++;
    }
  }
}
