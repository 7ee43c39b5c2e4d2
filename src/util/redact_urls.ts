/**
 * Redacting the credentials of URLs quoted in free text (error messages of `fetch`, of the MCP
 * client library, of providers), before the text reaches a log line, a client or a file.
 *
 * @module
 */

/**
 * A URL in free text: a scheme and `//`, the authority (up to `/`, `?`, `#`, `\` or a character
 * that cannot be in a URL), and the rest (path, query, fragment).
 */
const URL_IN_TEXT = /[A-Za-z][A-Za-z0-9+.-]*:\/\/([^\s/?#\\"'<>`]*)([^\s"'<>`]*)/g;

/** A query or fragment parameter's name and `=` (its value follows). */
const PARAMETER = /([?&;#])([^=?&;#]*)=/g;

/** What a credential-like parameter's name contains (lowercased, without `-`, `_` and `.`). */
const CREDENTIAL_PART =
  /token|key|secret|passw|pwd|signature|auth|credential|session|jwt|bearer|cookie/;

/** Credential-like parameter names that are short words (lowercased, as a whole). */
const CREDENTIAL_NAMES = new Set(["sig", "code", "pass", "pw"]);

/** What replaces a removed value. */
const REDACTED = "[redacted]";

/**
 * `text` with every URL it quotes made safe to show: the user name and password (`user:pw@`)
 * removed, and the values of credential-like query and fragment parameters (`token`, `key`,
 * `api_key`, `access_token`, `secret`, `password`, `sig`, `code`, …, any name containing `token`,
 * `key`, `secret`, `auth`, …; names compared case-insensitively after percent-decoding) replaced
 * by `[redacted]`. Text without `://` comes back unchanged. A value runs to the next `&` or `#`
 * (or the URL's end): an unencoded `;` or `)` in it is redacted with it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { redactUrls } from "./redact_urls.ts";
 * assert.equal(
 *   redactUrls("cannot fetch http://u:pw@127.0.0.1:8080/mcp?token=t&page=2: refused"),
 *   "cannot fetch http://127.0.0.1:8080/mcp?token=[redacted]&page=2: refused",
 * );
 * assert.equal(redactUrls("no URL here: a@b"), "no URL here: a@b");
 * ```
 *
 * @param text Any text
 * @returns The text, its URLs redacted
 */
export function redactUrls(text: string): string {
  if (!text.includes("://")) return text;
  return text.replace(URL_IN_TEXT, (url: string, authority: string, rest: string) => {
    const at = authority.lastIndexOf("@");
    const host = at === -1 ? authority : authority.slice(at + 1);
    const scheme = url.slice(0, url.length - authority.length - rest.length);
    return `${scheme}${host}${redactParameters(rest)}`;
  });
}

/** The path, query and fragment `rest` with credential-like parameters' values replaced. */
function redactParameters(rest: string): string {
  if (!rest.includes("=")) return rest;
  let out = "";
  let kept = 0;
  PARAMETER.lastIndex = 0;
  for (let match = PARAMETER.exec(rest); match !== null; match = PARAMETER.exec(rest)) {
    if (!isCredentialName(match[2]!)) continue;
    const start = match.index + match[0].length;
    let end = start;
    while (end < rest.length && rest[end] !== "&" && rest[end] !== "#") end++;
    out += `${rest.slice(kept, start)}${REDACTED}`;
    kept = end;
    PARAMETER.lastIndex = end;
  }
  return out + rest.slice(kept);
}

/** Whether a parameter's name (as written, maybe percent-encoded) looks like a credential's. */
function isCredentialName(raw: string): boolean {
  let name = raw.replace(/\+/g, " ");
  try {
    name = decodeURIComponent(name);
  } catch {
    // A malformed escape: the name as written.
  }
  const plain = name.toLowerCase().replace(/[-_.\s[\]]/g, "");
  return CREDENTIAL_PART.test(plain) || CREDENTIAL_NAMES.has(plain);
}
