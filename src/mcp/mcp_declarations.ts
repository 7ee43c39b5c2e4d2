/**
 * Validation and normalization of the MCP servers an ACP client declares in `session/new`,
 * `session/load` and `session/resume` (`params.mcpServers`), before anything is started.
 *
 * @module
 */
import { McpDeclarationError } from "./mcp_errors.ts";

/** Which remote transports are enabled (what mcpCapabilities advertises). */
export interface McpTransports {
  /** Whether `type: "http"` servers are accepted */
  readonly http: boolean;
  /** Whether `type: "sse"` servers are accepted */
  readonly sse: boolean;
}

/** A server the agent starts as a child process and talks to over stdio. */
export interface McpStdioServer {
  /**
   * The name used in tool names (`mcp__<name>__<tool>`) and logs: the declared one when it
   * matches /^[A-Za-z0-9_-]{1,32}$/, else normalized (see mcpServerName).
   */
  readonly name: string;
  /** The name as the client declared it. */
  readonly declaredName: string;
  /** How to reach the server */
  readonly transport: "stdio";
  /**
   * The program: an absolute path, or a name without a slash, looked up on the server's own
   * `PATH` (not the declared env's) when the server starts.
   */
  readonly command: string;
  /** The program's arguments */
  readonly args: readonly string[];
  /** null-prototype, frozen */
  readonly env: Readonly<Record<string, string>>;
}

/** A server reached over Streamable HTTP or the older HTTP+SSE transport. */
export interface McpRemoteServer {
  /**
   * The name used in tool names (`mcp__<name>__<tool>`) and logs: the declared one when it
   * matches /^[A-Za-z0-9_-]{1,32}$/, else normalized (see mcpServerName).
   */
  readonly name: string;
  /** The name as the client declared it. */
  readonly declaredName: string;
  /** How to reach the server */
  readonly transport: "http" | "sse";
  /**
   * The server's `http:` or `https:` URL, without user name and password: those become an
   * `Authorization: Basic` header.
   */
  readonly url: string;
  /** null-prototype, frozen; names as given (case kept) */
  readonly headers: Readonly<Record<string, string>>;
}

/** A declared MCP server, validated. */
export type McpServerSpec = McpStdioServer | McpRemoteServer;

/** At most this many servers in one request. */
const MAX_SERVERS = 64;
/** At most this many arguments for one stdio server. */
const MAX_ARGS = 1024;
/** At most this many environment variables for one stdio server. */
const MAX_ENV = 1024;
/** At most this many headers for one remote server. */
const MAX_HEADERS = 256;
/** At most this many UTF-8 bytes in any one string. */
const MAX_STRING_BYTES = 64 * 1024;
/** At most this many characters in a declared name. */
const MAX_NAME_LENGTH = 256;
/** A name kept as declared. */
const KEPT_NAME = /^[A-Za-z0-9_-]{1,32}$/;
/** An RFC 9110 token (a header name). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** How long a quoted user string may get in a message. */
const QUOTE_LENGTH = 80;

/**
 * Validates the `mcpServers` of a `session/new`, `session/load` or `session/resume` request and
 * normalizes the servers' names. The input is untrusted: every field is checked, extra fields
 * (such as `_meta`) are ignored. The first problem is thrown as an invalid-params error whose
 * message names the entry and the field; env and header values never appear in a message, nor
 * does a URL. A remote server's URL with a user name or password (`https://user:pw@host/mcp`)
 * has them taken out and sent as an `Authorization: Basic` header instead (percent-decoded,
 * UTF-8); with an `Authorization` header declared too, the declaration is refused.
 *
 * @example A stdio server and an HTTP server
 * ```ts
 * import assert from "node:assert/strict";
 * import { parseMcpServers } from "./mcp_declarations.ts";
 * const servers = parseMcpServers([
 *   { name: "files", command: "/usr/bin/mcp-files", args: ["--ro"], env: [] },
 *   { type: "http", name: "my docs", url: "https://docs.example/mcp", headers: [] },
 * ], { http: true, sse: false });
 * assert.equal(servers[0]!.name, "files");
 * assert.equal(servers[1]!.transport, "http");
 * assert.match(servers[1]!.name, /^my_docs_[0-9a-f]{8}$/);
 * assert.deepEqual(parseMcpServers(undefined, { http: true, sse: false }), []);
 * assert.throws(
 *   () => parseMcpServers([{ name: "x", command: "./npx", args: [], env: [] }], { http: false, sse: false }),
 *   /mcpServers\[0\]\.command: must be an absolute path or a program name without a slash, got "\.\/npx"/,
 * );
 * ```
 *
 * @param value The request's `mcpServers`; `undefined` or `null` means none
 * @param transports The remote transports enabled
 * @returns The servers, in their order, frozen
 * @throws {McpDeclarationError} On the first problem found, naming the entry and field
 */
export function parseMcpServers(
  value: unknown,
  transports: McpTransports,
): readonly McpServerSpec[] {
  if (value === undefined || value === null) return Object.freeze([]);
  if (!Array.isArray(value)) fail("mcpServers", `must be an array, got ${typeName(value)}`);
  if (value.length > MAX_SERVERS) {
    fail("mcpServers", `must list at most ${MAX_SERVERS} servers, got ${value.length}`);
  }
  const servers: McpServerSpec[] = [];
  const byName = new Map<string, number>();
  for (let index = 0; index < value.length; index++) {
    const server = parseServer(value[index], `mcpServers[${index}]`, transports);
    const earlier = byName.get(server.name);
    if (earlier !== undefined) {
      const other = servers[earlier]!;
      fail(
        `mcpServers[${index}].name`,
        other.declaredName === server.declaredName
          ? `duplicate name ${quote(server.declaredName)} (also mcpServers[${earlier}])`
          : `${quote(server.declaredName)} normalizes to ${quote(server.name)} like ` +
            `mcpServers[${earlier}]; names must stay distinct`,
      );
    }
    byName.set(server.name, index);
    servers.push(server);
  }
  return Object.freeze(servers);
}

/**
 * The name a declared server goes by in tool names (`mcp__<name>__<tool>`) and logs. A name
 * matching `/^[A-Za-z0-9_-]{1,32}$/` is kept; any other becomes a slug (runs of other
 * characters turned into `_`, trimmed of `_`, at most 20 characters, `server` when nothing is
 * left) followed by `_` and the 8 hex digits of the FNV-1a hash of the declared name, so that
 * distinct names stay distinct and the result is stable.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { mcpServerName } from "./mcp_declarations.ts";
 * assert.equal(mcpServerName("files"), "files");
 * assert.match(mcpServerName("my files"), /^my_files_[0-9a-f]{8}$/);
 * assert.match(mcpServerName("ファイル"), /^server_[0-9a-f]{8}$/);
 * ```
 *
 * @param declared The name as the client declared it
 * @returns The name to use, matching `/^[A-Za-z0-9_-]{1,32}$/`
 */
export function mcpServerName(declared: string): string {
  if (KEPT_NAME.test(declared)) return declared;
  const slug = declared.replace(/[^A-Za-z0-9_-]+/g, "_").replace(/^_+|_+$/g, "").slice(0, 20)
    .replace(/_+$/, "");
  return `${slug === "" ? "server" : slug}_${fnv1a(declared)}`;
}

/**
 * What logs may show of a server: names, transport, command and arguments, the URL without
 * credentials and with its query string replaced by `?…`, and the names (never the values) of
 * its environment variables or headers.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { describeMcpServer, parseMcpServers } from "./mcp_declarations.ts";
 * const [server] = parseMcpServers([{
 *   type: "http",
 *   name: "docs",
 *   url: "https://me:pw@docs.example/mcp?key=k",
 *   headers: [{ name: "X-Trace", value: "1" }],
 * }], { http: true, sse: false });
 * assert.deepEqual(describeMcpServer(server!), {
 *   name: "docs",
 *   transport: "http",
 *   url: "https://docs.example/mcp?…",
 *   headerNames: ["X-Trace", "Authorization"],
 * });
 * ```
 *
 * @param spec A server from {@link parseMcpServers}
 * @returns Fields safe to log
 */
export function describeMcpServer(spec: McpServerSpec): Record<string, unknown> {
  const names: Record<string, unknown> = spec.declaredName === spec.name
    ? { name: spec.name }
    : { name: spec.name, declaredName: spec.declaredName };
  if (spec.transport === "stdio") {
    return {
      ...names,
      transport: spec.transport,
      command: spec.command,
      args: [...spec.args],
      envNames: Object.keys(spec.env),
    };
  }
  return {
    ...names,
    transport: spec.transport,
    url: redactUrl(spec.url),
    headerNames: Object.keys(spec.headers),
  };
}

/** Validates one entry of `mcpServers`. */
function parseServer(entry: unknown, where: string, transports: McpTransports): McpServerSpec {
  const record = objectAt(entry, where);
  const type = own(record, "type");
  let transport: McpServerSpec["transport"];
  if (type === undefined || type === "stdio") {
    transport = "stdio";
    if (own(record, "command") === undefined && own(record, "url") !== undefined) {
      fail(`${where}.type`, 'is required for a server with a url ("http" or "sse")');
    }
  } else if (type === "http" || type === "sse") {
    transport = type;
    if (!transports[type]) {
      fail(`${where}.type`, `"${type}" is not supported (mcpCapabilities.${type} is false)`);
    }
  } else if (typeof type !== "string") {
    fail(`${where}.type`, `must be a string, got ${typeName(type)}`);
  } else if (type === "acp") {
    fail(`${where}.type`, '"acp" is not supported');
  } else {
    fail(
      `${where}.type`,
      `unknown transport ${quote(type)}; expected "http" or "sse", or no type for stdio`,
    );
  }
  const declaredName = parseName(own(record, "name"), `${where}.name`);
  const name = mcpServerName(declaredName);
  if (transport === "stdio") {
    return Object.freeze({
      name,
      declaredName,
      transport,
      command: parseCommand(own(record, "command"), `${where}.command`),
      args: parseArgs(own(record, "args"), `${where}.args`),
      env: parseEnv(own(record, "env"), `${where}.env`),
    });
  }
  const url = parseUrl(own(record, "url"), `${where}.url`);
  const headers = parseHeaders(own(record, "headers"), `${where}.headers`);
  return Object.freeze({
    name,
    declaredName,
    transport,
    ...withoutUserinfo(url, headers, where),
  });
}

/**
 * A URL's user name and password as an `Authorization: Basic` header, the URL without them
 * (`fetch` refuses a URL with credentials, and its error quotes it). Refused when the headers
 * have an `Authorization` already; the message never repeats the URL.
 */
function withoutUserinfo(
  text: string,
  headers: Readonly<Record<string, string>>,
  where: string,
): { url: string; headers: Readonly<Record<string, string>> } {
  const url = new URL(text);
  if (url.username === "" && url.password === "") return { url: text, headers };
  if (Object.keys(headers).some((name) => name.toLowerCase() === "authorization")) {
    fail(
      `${where}.url`,
      "must not have a user name or password when headers has an Authorization header",
    );
  }
  const credentials = `${percentDecoded(url.username)}:${percentDecoded(url.password)}`;
  let binary = "";
  for (const byte of new TextEncoder().encode(credentials)) binary += String.fromCharCode(byte);
  const withBasic: Record<string, string> = Object.create(null);
  for (const [name, value] of Object.entries(headers)) define(withBasic, name, value);
  define(withBasic, "Authorization", `Basic ${btoa(binary)}`);
  url.username = "";
  url.password = "";
  return { url: url.href, headers: Object.freeze(withBasic) };
}

/** A URL component percent-decoded, or as it is when it is not validly encoded. */
function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Validates a declared server name. */
function parseName(value: unknown, where: string): string {
  const name = stringAt(value, where);
  if (name === "") fail(where, "must not be empty");
  if (name.length > MAX_NAME_LENGTH) {
    fail(where, `must be at most ${MAX_NAME_LENGTH} characters, got ${name.length}`);
  }
  const control = findControl(name);
  if (control !== -1) {
    fail(where, `must not contain control characters (${codePoint(name, control)} at ${control})`);
  }
  return name;
}

/** Validates a stdio server's command. */
function parseCommand(value: unknown, where: string): string {
  const command = stringAt(value, where);
  if (command === "") fail(where, "must not be empty");
  if (command.includes("\0")) fail(where, "must not contain NUL");
  // A bare program name is looked up on the server's own PATH when the server starts; a relative
  // path would name a file relative to some working directory, which nothing here promises.
  if (!command.startsWith("/") && command.includes("/")) {
    fail(
      where,
      `must be an absolute path or a program name without a slash, got ${quote(command)}`,
    );
  }
  return command;
}

/** Validates a stdio server's arguments. */
function parseArgs(value: unknown, where: string): readonly string[] {
  const list = arrayAt(value, where, MAX_ARGS, "arguments");
  return Object.freeze(list.map((item, index) => {
    const arg = stringAt(item, `${where}[${index}]`);
    if (arg.includes("\0")) fail(`${where}[${index}]`, "must not contain NUL");
    return arg;
  }));
}

/** Validates a stdio server's environment variables. */
function parseEnv(value: unknown, where: string): Readonly<Record<string, string>> {
  const list = arrayAt(value, where, MAX_ENV, "variables");
  const env: Record<string, string> = Object.create(null);
  const seen = new Map<string, number>();
  list.forEach((item, index) => {
    const at = `${where}[${index}]`;
    const variable = objectAt(item, at);
    const name = stringAt(own(variable, "name"), `${at}.name`);
    if (name === "") fail(`${at}.name`, "must not be empty");
    if (name.includes("=")) fail(`${at}.name`, 'must not contain "="');
    if (name.includes("\0")) fail(`${at}.name`, "must not contain NUL");
    const earlier = seen.get(name);
    if (earlier !== undefined) {
      fail(`${at}.name`, `duplicate variable ${quote(name)} (also ${where}[${earlier}])`);
    }
    const text = stringAt(own(variable, "value"), `${at}.value`);
    if (text.includes("\0")) fail(`${at}.value`, "must not contain NUL");
    seen.set(name, index);
    define(env, name, text);
  });
  return Object.freeze(env);
}

/** Validates a remote server's URL. */
function parseUrl(value: unknown, where: string): string {
  const text = stringAt(value, where);
  // The URL may carry credentials, so messages do not quote it.
  if (text === "") fail(where, "must not be empty");
  if (/\s/.test(text) || findControl(text) !== -1) {
    fail(where, "must not contain whitespace, NUL or other control characters");
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    fail(where, "must be an absolute URL");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    fail(where, `must be an http: or https: URL, got ${quote(url.protocol)}`);
  }
  return text;
}

/** Validates a remote server's headers. */
function parseHeaders(value: unknown, where: string): Readonly<Record<string, string>> {
  const list = arrayAt(value, where, MAX_HEADERS, "headers");
  const headers: Record<string, string> = Object.create(null);
  const seen = new Map<string, number>();
  list.forEach((item, index) => {
    const at = `${where}[${index}]`;
    const header = objectAt(item, at);
    const name = stringAt(own(header, "name"), `${at}.name`);
    if (!TOKEN.test(name)) {
      fail(
        `${at}.name`,
        `must be an HTTP token (letters, digits, !#$%&'*+-.^_\`|~), got ${quote(name)}`,
      );
    }
    const lower = name.toLowerCase();
    const earlier = seen.get(lower);
    if (earlier !== undefined) {
      fail(
        `${at}.name`,
        `duplicate header ${
          quote(lower)
        } (headers are case-insensitive; also ${where}[${earlier}])`,
      );
    }
    const text = stringAt(own(header, "value"), `${at}.value`);
    for (let i = 0; i < text.length; i++) {
      const code = text.charCodeAt(i);
      if (code > 0xff) fail(`${at}.value`, "must contain only characters up to U+00FF");
      if (isControl(code) && code !== 0x09) {
        fail(`${at}.value`, "must not contain CR, LF, NUL or other control characters but tab");
      }
    }
    seen.set(lower, index);
    define(headers, name, text);
  });
  return Object.freeze(headers);
}

/** Throws the declaration error for `where` (answered with -32602 by the protocol layer). */
function fail(where: string, problem: string): never {
  throw new McpDeclarationError(`${where}: ${problem}`);
}

/** `value` as a record, or an error. */
function objectAt(value: unknown, where: string): object {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    fail(where, `must be an object, got ${typeName(value)}`);
  }
  return value;
}

/** `value` as an array of at most `max` items, or an error. */
function arrayAt(value: unknown, where: string, max: number, items: string): readonly unknown[] {
  if (value === undefined) fail(where, "is required");
  if (!Array.isArray(value)) fail(where, `must be an array, got ${typeName(value)}`);
  if (value.length > max) fail(where, `must hold at most ${max} ${items}, got ${value.length}`);
  return Array.from(value);
}

/** `value` as a string of at most 64 KiB, or an error (which never shows the content). */
function stringAt(value: unknown, where: string): string {
  if (value === undefined) fail(where, "is required");
  if (typeof value !== "string") fail(where, `must be a string, got ${typeName(value)}`);
  if (tooLong(value)) fail(where, `must be at most ${MAX_STRING_BYTES} bytes`);
  return value;
}

/** Whether `text` is longer than 64 KiB in UTF-8. */
function tooLong(text: string): boolean {
  if (text.length * 3 <= MAX_STRING_BYTES) return false;
  if (text.length > MAX_STRING_BYTES) return true;
  return new TextEncoder().encode(text).length > MAX_STRING_BYTES;
}

/** An own property of `record`, never an inherited one. */
function own(record: object, key: string): unknown {
  return Object.hasOwn(record, key) ? (record as Record<string, unknown>)[key] : undefined;
}

/** Sets `key` as an ordinary own property, whatever its name. */
function define(record: Record<string, string>, key: string, value: string): void {
  Object.defineProperty(record, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  });
}

/** The index of the first C0, DEL or C1 control character in `text`, or -1. */
function findControl(text: string): number {
  for (let i = 0; i < text.length; i++) {
    if (isControl(text.charCodeAt(i))) return i;
  }
  return -1;
}

/** Whether `code` is a C0, DEL or C1 control character. */
function isControl(code: number): boolean {
  return code < 0x20 || (code >= 0x7f && code <= 0x9f);
}

/** `U+XXXX` of the character at `index`. */
function codePoint(text: string, index: number): string {
  return `U+${text.charCodeAt(index).toString(16).toUpperCase().padStart(4, "0")}`;
}

/** What a value is, for messages (never its content). */
function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** A user string for a message: JSON-quoted, control characters escaped, cut to ~80 chars. */
function quote(text: string): string {
  let cut = text;
  if (text.length > QUOTE_LENGTH) {
    cut = text.slice(0, QUOTE_LENGTH - 3);
    if (/[\uD800-\uDBFF]$/.test(cut)) cut = cut.slice(0, -1);
  }
  const quoted = JSON.stringify(cut).replace(
    /[\u007f-\u009f\u2028\u2029]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
  return cut === text ? quoted : `${quoted}… (${text.length} characters)`;
}

/**
 * The FNV-1a 32-bit hash of `text`'s UTF-8 bytes, as 8 lowercase hex digits: the suffix that
 * keeps normalized server names (and cut tool names) apart.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { fnv1a } from "./mcp_declarations.ts";
 * assert.equal(fnv1a(""), "811c9dc5");
 * ```
 *
 * @param text Any text
 * @returns 8 hex digits
 */
export function fnv1a(text: string): string {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash = Math.imul(hash ^ byte, 0x01000193);
  }
  return (hash >>> 0).toString(16).padStart(8, "0");
}

/** `url` without username and password, its query string replaced by `?…`. */
function redactUrl(text: string): string {
  const url = new URL(text);
  url.username = "";
  url.password = "";
  const query = url.search === "" ? "" : "?…";
  const hash = url.hash;
  url.search = "";
  url.hash = "";
  return `${url.href}${query}${hash}`;
}
