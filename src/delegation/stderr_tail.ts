/**
 * The end of a delegated agent's stderr as a failure message may quote it: bounded, terminal
 * escapes and control characters stripped, keys and tokens redacted.
 *
 * @module
 */
import { redactUrls } from "../util/redact_urls.ts";

/** The most UTF-8 bytes of stderr a failure message quotes, by default. */
export const STDERR_TAIL_MAX_BYTES = 2048;

/** The most lines of stderr a failure message quotes, by default. */
export const STDERR_TAIL_MAX_LINES = 20;

/** What replaces a removed secret. */
const REDACTED = "[redacted]";

/** How {@link stderrTail} cuts and redacts. */
export interface StderrTailOptions {
  /** Values to redact wherever they appear (the server's API keys and token). @default {[]} */
  readonly secrets?: readonly string[];
  /**
   * Whether `text` starts mid-stream (more was written than kept): its first, partial line is
   * dropped, so that the end of a key cut in two cannot escape redaction. @default {false}
   */
  readonly truncated?: boolean;
  /** Most UTF-8 bytes kept. @default {STDERR_TAIL_MAX_BYTES} */
  readonly maxBytes?: number;
  /** Most lines kept. @default {STDERR_TAIL_MAX_LINES} */
  readonly maxLines?: number;
}

/**
 * Terminal escape sequences: OSC (`ESC ]` … BEL or `ESC \`, e.g. a title or a hyperlink), CSI
 * (`ESC [` or the 8-bit `\x9b`, then parameters and a final byte: colors, cursor moves), DCS/PM/APC
 * strings, and the other two-byte `ESC` sequences.
 */
const ANSI_ESCAPES =
  // deno-lint-ignore no-control-regex
  /\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?|\x1b[PX^_][^\x1b]*(?:\x1b\\)?|\x1b[ -~]?/g;

/**
 * Control and invisible characters (C0 but tab and newline, DEL, C1, zero-width and bidi
 * controls, the byte order mark) and lone surrogates (a character cut in two).
 */
const CONTROL_CHARACTERS =
  // deno-lint-ignore no-control-regex
  /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/** Secrets by their shape: what replaces each match. */
const SECRET_SHAPES: ReadonlyArray<readonly [RegExp, string]> = [
  // An Authorization header's value.
  [/\b(Bearer)(\s+)[A-Za-z0-9._~+/=-]{4,}/gi, `$1$2${REDACTED}`],
  // OpenAI, Anthropic, DeepSeek and the like (`sk-…`, `sk-ant-…`, `sk-proj-…`).
  [/\bsk-[A-Za-z0-9_-]{8,}/g, REDACTED],
  // GitHub, Slack and AWS access keys.
  [/\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{10,}/g, REDACTED],
  [/\bxox[abprs]-[A-Za-z0-9-]{10,}/g, REDACTED],
  [/\bAKIA[0-9A-Z]{16}\b/g, REDACTED],
  // `NAME=value` or `NAME: value` where the name says it holds a secret (an `env` dump, a config).
  [
    /\b([A-Z0-9_]*(?:API_?KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)[A-Z0-9_]*)(["']?\s*[=:]\s*["']?)[^\s"']+/g,
    `$1$2${REDACTED}`,
  ],
  [
    /\b(api_?key|apiKey|access_token|auth_token|secret|password)(["']?\s*[=:]\s*["']?)[^\s"']+/g,
    `$1$2${REDACTED}`,
  ],
];

/**
 * The end of `text` (an agent's stderr) fit to quote in a failure message: terminal escapes and
 * control characters stripped (`\r` counts as a line break), then the given secrets, keys by
 * their shape (`sk-…`, `ghp_…`, `AKIA…`), `Bearer …` tokens, `SOME_API_KEY=…`-like assignments
 * and URLs' credentials (see `redactUrls`) redacted, then the last `maxLines` lines and at most
 * `maxBytes` UTF-8 bytes kept (never half a character); `…` starts it when something was cut.
 * Blank lines at either end are dropped.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { stderrTail } from "./stderr_tail.ts";
 * const stderr = "\x1b[31merror\x1b[0m: Authorization: Bearer abc.def.ghi\nkey sk-live-1234567890\n";
 * assert.equal(
 *   stderrTail(stderr, { secrets: [] }),
 *   "error: Authorization: Bearer [redacted]\nkey [redacted]",
 * );
 * ```
 *
 * @param text What the agent wrote on stderr (its kept end)
 * @param options The secrets to redact, and the bounds
 * @returns The sanitized end, `""` when nothing is left
 */
export function stderrTail(text: string, options: StderrTailOptions = {}): string {
  let clean = text;
  let cut = false;
  if (options.truncated) {
    const newline = clean.indexOf("\n");
    clean = newline === -1 ? clean.slice(Math.min(256, clean.length)) : clean.slice(newline + 1);
    cut = true;
  }
  clean = clean.replace(ANSI_ESCAPES, "").replace(/\r\n?/g, "\n").replace(CONTROL_CHARACTERS, "");
  clean = redactSecrets(clean, options.secrets ?? []);
  const lines = clean.split("\n").map((line) => line.trimEnd());
  while (lines.length > 0 && lines[0] === "") lines.shift();
  while (lines.length > 0 && lines.at(-1) === "") lines.pop();
  const maxLines = options.maxLines ?? STDERR_TAIL_MAX_LINES;
  if (lines.length > maxLines) {
    lines.splice(0, lines.length - maxLines);
    cut = true;
  }
  const joined = lines.join("\n");
  const kept = utf8Tail(joined, Math.max(0, (options.maxBytes ?? STDERR_TAIL_MAX_BYTES) - 3));
  if (kept.length < joined.length) cut = true;
  if (kept === "") return "";
  return cut ? `…${kept}` : kept;
}

/**
 * `text` with the given secrets (longest first, so a longer one is not half-replaced), keys and
 * tokens by their shape and URLs' credentials redacted, as {@link stderrTail} does (nothing is
 * cut or stripped): for other text an agent chose, such as an error message it answered.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redactSecrets } from "./stderr_tail.ts";
 * assert.equal(redactSecrets("bad key k-123456", ["k-123456"]), "bad key [redacted]");
 * ```
 *
 * @param text Any text
 * @param secrets Values to redact
 * @returns The text, redacted
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let result = text;
  const values = secrets.filter((secret) => secret.length >= 4).sort((a, b) => b.length - a.length);
  for (const secret of values) result = result.split(secret).join(REDACTED);
  for (const [shape, replacement] of SECRET_SHAPES) result = result.replace(shape, replacement);
  return redactUrls(result);
}

/** The longest end of `text` of at most `maxBytes` UTF-8 bytes, cut between characters. */
function utf8Tail(text: string, maxBytes: number): string {
  let bytes = 0;
  let start = text.length;
  while (start > 0) {
    const code = text.codePointAt(start - 1) as number;
    // A low surrogate: the character is the pair that ends here.
    const pair = code >= 0xdc00 && code <= 0xdfff && start >= 2;
    const point = pair ? text.codePointAt(start - 2) as number : code;
    const size = point < 0x80 ? 1 : point < 0x800 ? 2 : point < 0x10000 ? 3 : 4;
    if (bytes + size > maxBytes) break;
    bytes += size;
    start -= pair ? 2 : 1;
  }
  return text.slice(start);
}
