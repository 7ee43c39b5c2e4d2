import assert from "node:assert/strict";
import { RequestError } from "@agentclientprotocol/sdk";
import {
  describeMcpServer,
  type McpRemoteServer,
  mcpServerName,
  type McpStdioServer,
  type McpTransports,
  parseMcpServers,
} from "../../src/mcp/mcp_declarations.ts";
import { McpDeclarationError } from "../../src/mcp/mcp_errors.ts";
import { mcpServersOf } from "../../src/protocol/capabilities.ts";
import { invalid } from "../../src/protocol/request_errors.ts";

const ALL: McpTransports = { http: true, sse: true };
const NONE: McpTransports = { http: false, sse: false };
/** A value that must never show up in a message or a description. */
const SECRET = "s3cr3t-Zq9-value-7d1c";

/** A valid stdio declaration, with `extra` fields merged over it. */
function stdio(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { name: "files", command: "/usr/bin/mcp-files", args: [], env: [], ...extra };
}

/** A valid remote declaration, with `extra` fields merged over it. */
function remote(type: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type, name: "docs", url: "https://docs.example/mcp", headers: [], ...extra };
}

/**
 * Asserts that parsing `value` throws a declaration error whose answer (what the protocol layer
 * makes of it: -32602) has a message matching `pattern`, never `SECRET`.
 */
function refused(value: unknown, pattern: RegExp, transports: McpTransports = ALL): string {
  let message = "";
  assert.throws(() => parseMcpServers(value, transports), (error: unknown) => {
    assert.ok(error instanceof McpDeclarationError, String(error));
    const answer = invalid(error.message);
    assert.equal(answer.code, -32602);
    assert.match(answer.message, pattern);
    assert.ok(!answer.message.includes(SECRET), answer.message);
    message = answer.message;
    return true;
  });
  return message;
}

Deno.test("mcpServersOf answers a bad declaration with -32602 and the declaration's message", () => {
  const value = [stdio({ args: [SECRET, 1] })];
  const message = refused(value, /^Invalid params: mcpServers\[0\]\.args\[1\]: /);
  assert.throws(() => mcpServersOf(value), (error: unknown) => {
    assert.ok(error instanceof RequestError, String(error));
    assert.equal(error.code, -32602);
    assert.equal(error.message, message);
    assert.ok(!JSON.stringify(error.data ?? null).includes(SECRET));
    return true;
  });
});

/** The one stdio server `value` declares. */
function oneStdio(value: Record<string, unknown>): McpStdioServer {
  const [server] = parseMcpServers([value], ALL);
  assert.equal(server?.transport, "stdio");
  return server as McpStdioServer;
}

/** The one remote server `value` declares. */
function oneRemote(value: Record<string, unknown>): McpRemoteServer {
  const [server] = parseMcpServers([value], ALL);
  assert.notEqual(server?.transport, "stdio");
  return server as McpRemoteServer;
}

Deno.test("parseMcpServers() takes undefined or null as no servers, refuses other non-arrays", () => {
  for (const value of [undefined, null, []]) {
    const servers = parseMcpServers(value, NONE);
    assert.deepEqual(servers, []);
    assert.ok(Object.isFrozen(servers));
  }
  refused({}, /^Invalid params: mcpServers: must be an array, got object$/);
  refused("[]", /^Invalid params: mcpServers: must be an array, got string$/);
  refused(3, /mcpServers: must be an array, got number/);
});

Deno.test("parseMcpServers() reads a stdio server, ignores extra fields and freezes it all", () => {
  const servers = parseMcpServers([
    stdio({
      args: ["--root", "/srv", ""],
      env: [{ name: "TOKEN", value: SECRET, _meta: { x: 1 } }, { name: "EMPTY", value: "" }],
      _meta: { note: "ignored" },
      extra: true,
    }),
  ], NONE);
  assert.equal(servers.length, 1);
  const server = servers[0] as McpStdioServer;
  assert.deepEqual({ ...server, env: { ...server.env } }, {
    name: "files",
    declaredName: "files",
    transport: "stdio",
    command: "/usr/bin/mcp-files",
    args: ["--root", "/srv", ""],
    env: { TOKEN: SECRET, EMPTY: "" },
  });
  assert.equal(Object.getPrototypeOf(server.env), null);
  assert.ok(!("_meta" in server) && !("extra" in server));
  for (const frozen of [servers, server, server.args, server.env]) {
    assert.ok(Object.isFrozen(frozen));
  }
});

Deno.test('parseMcpServers() takes type "stdio" (ACP v2) like no type', () => {
  assert.equal(oneStdio(stdio({ type: "stdio" })).command, "/usr/bin/mcp-files");
});

Deno.test("parseMcpServers() reads http and sse servers, keeping header names as given", () => {
  const [http, sse] = parseMcpServers([
    remote("http", {
      headers: [
        { name: "Authorization", value: `Bearer ${SECRET}` },
        { name: "X-Tab", value: "a\tb" },
        { name: "X-Latin1", value: "caf\u00e9 \u00ff" },
        { name: "X-Empty", value: "" },
      ],
      _meta: {},
    }),
    remote("sse", { name: "events", url: "http://127.0.0.1:8080/sse" }),
  ], ALL) as McpRemoteServer[];
  assert.deepEqual({ ...http!, headers: { ...http!.headers } }, {
    name: "docs",
    declaredName: "docs",
    transport: "http",
    url: "https://docs.example/mcp",
    headers: {
      Authorization: `Bearer ${SECRET}`,
      "X-Tab": "a\tb",
      "X-Latin1": "caf\u00e9 \u00ff",
      "X-Empty": "",
    },
  });
  assert.equal(Object.getPrototypeOf(http!.headers), null);
  assert.ok(Object.isFrozen(http) && Object.isFrozen(http!.headers));
  assert.equal(sse!.transport, "sse");
  assert.deepEqual(Object.keys(sse!.headers), []);
  // fetch's Headers takes every accepted value.
  assert.doesNotThrow(() => new Headers(Object.entries(http!.headers)));
});

Deno.test("parseMcpServers() gates remote transports on the capabilities", () => {
  refused(
    [stdio(), remote("sse")],
    /^Invalid params: mcpServers\[1\]\.type: "sse" is not supported \(mcpCapabilities\.sse is false\)$/,
    { http: true, sse: false },
  );
  refused(
    [remote("http")],
    /^Invalid params: mcpServers\[0\]\.type: "http" is not supported \(mcpCapabilities\.http is false\)$/,
    { http: false, sse: true },
  );
  assert.equal(parseMcpServers([remote("sse")], { http: false, sse: true }).length, 1);
  assert.equal(parseMcpServers([stdio()], NONE).length, 1);
});

Deno.test("parseMcpServers() refuses acp, unknown and non-string types", () => {
  refused([remote("acp", { id: "x" })], /mcpServers\[0\]\.type: "acp" is not supported/);
  refused([remote("websocket")], /mcpServers\[0\]\.type: unknown transport "websocket"/);
  refused([stdio({ type: null })], /mcpServers\[0\]\.type: must be a string, got null/);
  refused([stdio({ type: 1 })], /mcpServers\[0\]\.type: must be a string, got number/);
  refused(
    [{ name: "docs", url: "https://docs.example/mcp", headers: [] }],
    /mcpServers\[0\]\.type: is required for a server with a url \("http" or "sse"\)/,
  );
});

Deno.test("parseMcpServers() refuses an entry that is not an object", () => {
  refused([stdio(), "files"], /^Invalid params: mcpServers\[1\]: must be an object, got string$/);
  refused([null], /mcpServers\[0\]: must be an object, got null/);
  refused([[]], /mcpServers\[0\]: must be an object, got array/);
});

Deno.test("parseMcpServers() reads own fields only", () => {
  const inherited = Object.assign(Object.create({ command: "/bin/sh" }), {
    name: "x",
    args: [],
    env: [],
  });
  refused([inherited], /mcpServers\[0\]\.command: is required/);
});

Deno.test("parseMcpServers() checks names", () => {
  refused([stdio({ name: undefined })], /mcpServers\[0\]\.name: is required/);
  refused([stdio({ name: 7 })], /mcpServers\[0\]\.name: must be a string, got number/);
  refused([stdio({ name: "" })], /mcpServers\[0\]\.name: must not be empty/);
  refused(
    [stdio({ name: "a\u0007b" })],
    /name: must not contain control characters \(U\+0007 at 1\)/,
  );
  refused([stdio({ name: "a\nb" })], /name: must not contain control characters \(U\+000A at 1\)/);
  refused(
    [stdio({ name: "ab\u007f" })],
    /name: must not contain control characters \(U\+007F at 2\)/,
  );
  refused(
    [stdio({ name: "\u0085" })],
    /name: must not contain control characters \(U\+0085 at 0\)/,
  );
  refused([stdio({ name: "n".repeat(257) })], /name: must be at most 256 characters, got 257/);
  assert.equal(oneStdio(stdio({ name: "n".repeat(256) })).declaredName, "n".repeat(256));
});

Deno.test("mcpServerName() keeps fitting names and normalizes others with a stable hash", () => {
  for (const name of ["files", "a", "My-Server_2", "x".repeat(32), "___", "-"]) {
    assert.equal(mcpServerName(name), name);
  }
  // FNV-1a 32-bit of the UTF-8 bytes.
  assert.equal(mcpServerName("a b"), "a_b_10a3f9f2");
  assert.equal(mcpServerName("my files"), "my_files_11cf38f4");
  assert.equal(mcpServerName("ファイル"), "server_eac6e494");
  assert.equal(mcpServerName("!!!"), "server_2d53a722");
  assert.equal(mcpServerName("a b"), mcpServerName("a b"));
  assert.notEqual(mcpServerName("a b"), mcpServerName("a  b"));
  assert.match(mcpServerName("  my  files!  "), /^my_files_[0-9a-f]{8}$/);
  assert.match(mcpServerName("x".repeat(33)), /^x{20}_[0-9a-f]{8}$/);
  assert.match(mcpServerName(`${"a".repeat(19)} b`), /^a{19}_[0-9a-f]{8}$/);
  assert.match(mcpServerName("files.v2"), /^files_v2_[0-9a-f]{8}$/);
  for (const name of ["a b", "x".repeat(256), "ファイル", "..", "é"]) {
    assert.match(mcpServerName(name), /^[A-Za-z0-9_-]{1,32}$/);
  }
});

Deno.test("parseMcpServers() reports the normalized name and keeps the declared one", () => {
  const server = oneStdio(stdio({ name: "my files" }));
  assert.equal(server.name, "my_files_11cf38f4");
  assert.equal(server.declaredName, "my files");
});

Deno.test("parseMcpServers() refuses duplicate names, declared or normalized", () => {
  refused(
    [stdio(), remote("http", { name: "files" })],
    /^Invalid params: mcpServers\[1\]\.name: duplicate name "files" \(also mcpServers\[0\]\)$/,
  );
  refused(
    [stdio({ name: "a_b_10a3f9f2" }), stdio({ name: "x" }), stdio({ name: "a b" })],
    /^Invalid params: mcpServers\[2\]\.name: "a b" normalizes to "a_b_10a3f9f2" like mcpServers\[0\]; names must stay distinct$/,
  );
  refused(
    [stdio({ name: "a b" }), stdio({ name: "a b" })],
    /mcpServers\[1\]\.name: duplicate name "a b"/,
  );
  // Case matters: tool names are case-sensitive.
  assert.equal(parseMcpServers([stdio({ name: "Files" }), stdio()], ALL).length, 2);
});

Deno.test("parseMcpServers() checks a stdio command", () => {
  refused([stdio({ command: undefined })], /mcpServers\[0\]\.command: is required/);
  refused([stdio({ command: ["/bin/sh"] })], /command: must be a string, got array/);
  refused([stdio({ command: "" })], /command: must not be empty/);
  refused(
    [stdio(), stdio({ name: "b", command: "./npx" })],
    /^Invalid params: mcpServers\[1\]\.command: must be an absolute path or a program name without a slash, got "\.\/npx"$/,
  );
  refused(
    [stdio({ command: "bin/x" })],
    /command: must be an absolute path or a program name without a slash, got "bin\/x"/,
  );
  // A bare name is looked up on PATH when the server starts.
  assert.equal(parseMcpServers([stdio({ command: "npx" })], ALL)[0]?.transport, "stdio");
  refused([stdio({ command: "/bin/x\0y" })], /command: must not contain NUL/);
});

Deno.test("parseMcpServers() checks stdio args", () => {
  refused([stdio({ args: undefined })], /mcpServers\[0\]\.args: is required/);
  refused([stdio({ args: null })], /args: must be an array, got null/);
  refused([stdio({ args: "--x" })], /args: must be an array, got string/);
  refused([stdio({ args: ["a", 1] })], /mcpServers\[0\]\.args\[1\]: must be a string, got number/);
  refused([stdio({ args: ["a", "b\0"] })], /mcpServers\[0\]\.args\[1\]: must not contain NUL/);
  assert.equal(oneStdio(stdio({ args: Array(1024).fill("a") })).args.length, 1024);
  refused(
    [stdio({ args: Array(1025).fill("a") })],
    /args: must hold at most 1024 arguments, got 1025/,
  );
});

Deno.test("parseMcpServers() checks stdio env, never showing a value", () => {
  const env = (...entries: unknown[]): unknown[] => [stdio({ env: entries })];
  refused([stdio({ env: undefined })], /mcpServers\[0\]\.env: is required/);
  refused([stdio({ env: { A: SECRET } })], /env: must be an array, got object/);
  refused(env(SECRET), /mcpServers\[0\]\.env\[0\]: must be an object, got string/);
  refused(env({ value: SECRET }), /env\[0\]\.name: is required/);
  refused(env({ name: "", value: SECRET }), /env\[0\]\.name: must not be empty/);
  refused(
    env({ name: "A", value: "1" }, { name: "A=B", value: SECRET }),
    /^Invalid params: mcpServers\[0\]\.env\[1\]\.name: must not contain "="$/,
  );
  refused(env({ name: "A\0", value: SECRET }), /env\[0\]\.name: must not contain NUL/);
  refused(env({ name: "A" }), /env\[0\]\.value: is required/);
  refused(env({ name: "A", value: 42 }), /env\[0\]\.value: must be a string, got number/);
  refused(
    env({ name: "A", value: `${SECRET}\0${SECRET}` }),
    /^Invalid params: mcpServers\[0\]\.env\[0\]\.value: must not contain NUL$/,
  );
  refused(
    env({ name: "A", value: SECRET }, { name: "B", value: "" }, { name: "A", value: SECRET }),
    /mcpServers\[0\]\.env\[2\]\.name: duplicate variable "A" \(also mcpServers\[0\]\.env\[0\]\)/,
  );
  const many = Array.from({ length: 1025 }, (_, i) => ({ name: `V${i}`, value: SECRET }));
  refused([stdio({ env: many })], /env: must hold at most 1024 variables, got 1025/);
  assert.equal(Object.keys(oneStdio(stdio({ env: many.slice(1) })).env).length, 1024);
});

Deno.test("parseMcpServers() checks remote URLs without quoting them", () => {
  refused([remote("http", { url: undefined })], /mcpServers\[0\]\.url: is required/);
  refused([remote("http", { url: 1 })], /url: must be a string, got number/);
  refused([remote("http", { url: "" })], /url: must not be empty/);
  refused([remote("http", { url: "docs.example/mcp" })], /url: must be an absolute URL/);
  refused(
    [remote("sse", { url: "ftp://docs.example/" })],
    /url: must be an http: or https: URL, got "ftp:"/,
  );
  refused([remote("http", { url: "file:///etc/passwd" })], /url: must be an http: or https: URL/);
  for (
    const bad of [" https://x/", "https://x/ a", "https://x/\t", "https://x/\0", "https://x/\n"]
  ) {
    refused(
      [remote("http", { url: bad })],
      /url: must not contain whitespace, NUL or other control/,
    );
  }
  const message = refused(
    [remote("http", { url: `gopher://user:${SECRET}@docs.example/?k=${SECRET}` })],
    /url: must be an http: or https: URL, got "gopher:"/,
  );
  assert.ok(!message.includes("user"));
  refused([remote("http", { url: `https://docs example/${SECRET}` })], /url: must not contain/);
});

Deno.test("parseMcpServers() checks headers, never showing a value", () => {
  const headers = (...entries: unknown[]): unknown[] => [remote("http", { headers: entries })];
  refused([remote("http", { headers: undefined })], /mcpServers\[0\]\.headers: is required/);
  refused([remote("sse", { headers: {} })], /headers: must be an array, got object/);
  refused(headers(null), /headers\[0\]: must be an object, got null/);
  refused(headers({ value: SECRET }), /headers\[0\]\.name: is required/);
  for (const bad of ["", "X Token", "X:Token", "X-Tök", "(x)", "a\r\nb"]) {
    refused(
      headers({ name: bad, value: SECRET }),
      /^Invalid params: mcpServers\[0\]\.headers\[0\]\.name: must be an HTTP token/,
    );
  }
  assert.deepEqual(
    Object.keys(
      oneRemote(remote("http", { headers: [{ name: "!#$%&'*+-.^_`|~09azAZ", value: "" }] }))
        .headers,
    ),
    ["!#$%&'*+-.^_`|~09azAZ"],
  );
  refused(
    headers(
      { name: "Authorization", value: SECRET },
      { name: "authorization", value: SECRET },
    ),
    /^Invalid params: mcpServers\[0\]\.headers\[1\]\.name: duplicate header "authorization" \(headers are case-insensitive; also mcpServers\[0\]\.headers\[0\]\)$/,
  );
  refused(headers({ name: "A", value: null }), /headers\[0\]\.value: must be a string, got null/);
  for (const bad of ["\r", "\n", "\0", "\u0001", "\u007f", "\u0085"]) {
    refused(
      headers({ name: "A", value: `${SECRET}${bad}${SECRET}` }),
      /^Invalid params: mcpServers\[0\]\.headers\[0\]\.value: must not contain CR, LF, NUL or other control characters but tab$/,
    );
  }
  for (const bad of ["\u0100", "€", "😀"]) {
    refused(
      headers({ name: "A", value: `${SECRET}${bad}` }),
      /headers\[0\]\.value: must contain only characters up to U\+00FF$/,
    );
  }
  const many = Array.from({ length: 257 }, (_, i) => ({ name: `H${i}`, value: SECRET }));
  refused([remote("http", { headers: many })], /headers: must hold at most 256 headers, got 257/);
  assert.equal(
    Object.keys(oneRemote(remote("http", { headers: many.slice(1) })).headers).length,
    256,
  );
});

Deno.test("parseMcpServers() refuses more than 64 servers", () => {
  const servers = (count: number): unknown[] =>
    Array.from({ length: count }, (_, i) => stdio({ name: `s${i}` }));
  assert.equal(parseMcpServers(servers(64), ALL).length, 64);
  refused(servers(65), /^Invalid params: mcpServers: must list at most 64 servers, got 65$/);
});

Deno.test("parseMcpServers() refuses strings over 64 KiB of UTF-8", () => {
  const big = "a".repeat(64 * 1024);
  assert.equal(oneStdio(stdio({ command: `/${big.slice(1)}` })).command.length, 65536);
  refused([stdio({ command: `/${big}` })], /mcpServers\[0\]\.command: must be at most 65536 bytes/);
  refused([stdio({ args: ["x", `${big}a`] })], /args\[1\]: must be at most 65536 bytes/);
  // 33,000 characters, 66,000 bytes.
  refused(
    [stdio({ env: [{ name: "A", value: "\u00e9".repeat(33_000) }] })],
    /env\[0\]\.value: must be at most 65536 bytes/,
  );
  refused(
    [remote("http", { headers: [{ name: "A", value: SECRET.repeat(4000) }] })],
    /headers\[0\]\.value: must be at most 65536 bytes/,
  );
  refused([remote("http", { url: `https://x/${big}` })], /url: must be at most 65536 bytes/);
});

Deno.test("parseMcpServers() quotes user strings as JSON, cut to about 80 characters", () => {
  const message = refused(
    [stdio({ command: `bin/${"x".repeat(500)}` })],
    /command: must be an absolute path or a program name without a slash, got "bin\/x+"… \(504 characters\)$/,
  );
  assert.ok(message.length < 240, message);
  refused([stdio({ command: 'a/\u0085\u2028"b' })], /got "a\/\\u0085\\u2028\\"b"$/);
  refused([remote("a\nb")], /unknown transport "a\\nb"/);
});

Deno.test("parseMcpServers() stores __proto__, constructor and toString as ordinary names", () => {
  const names = ["__proto__", "constructor", "toString", "hasOwnProperty"];
  const entries = JSON.parse(JSON.stringify(names.map((name) => ({ name, value: `v:${name}` }))));
  const env = oneStdio(stdio({ env: entries })).env;
  const headers = oneRemote(remote("http", { headers: entries })).headers;
  for (const record of [env, headers]) {
    assert.equal(Object.getPrototypeOf(record), null);
    assert.deepEqual(Object.keys(record), names);
    for (const name of names) {
      assert.ok(Object.hasOwn(record, name));
      assert.equal(record[name], `v:${name}`);
    }
    assert.ok(Object.isFrozen(record));
  }
  assert.equal(({} as Record<string, unknown>).toString, Object.prototype.toString);
  // A "__proto__" key in a server entry (JSON.parse makes it an own property) lends no fields.
  refused(
    JSON.parse('[{"__proto__":{"command":"/bin/evil"},"name":"x","args":[],"env":[]}]'),
    /mcpServers\[0\]\.command: is required/,
  );
});

Deno.test("describeMcpServer() shows names, never env or header values", () => {
  const [files, docs] = parseMcpServers([
    stdio({
      name: "my files",
      args: ["--root", "/srv"],
      env: [{ name: "TOKEN", value: SECRET }, { name: "__proto__", value: SECRET }],
    }),
    remote("sse", {
      url: `https://bot:${SECRET}@docs.example:8443/mcp/sse?token=${SECRET}&x=1#frag`,
      headers: [{ name: "X-Key", value: `Bearer ${SECRET}` }],
    }),
  ], ALL);
  const stdioView = describeMcpServer(files!);
  assert.deepEqual(stdioView, {
    name: "my_files_11cf38f4",
    declaredName: "my files",
    transport: "stdio",
    command: "/usr/bin/mcp-files",
    args: ["--root", "/srv"],
    envNames: ["TOKEN", "__proto__"],
  });
  const remoteView = describeMcpServer(docs!);
  assert.deepEqual(remoteView, {
    name: "docs",
    transport: "sse",
    url: "https://docs.example:8443/mcp/sse?…#frag",
    headerNames: ["X-Key", "Authorization"],
  });
  for (const view of [stdioView, remoteView]) {
    assert.ok(!JSON.stringify(view).includes(SECRET));
    assert.ok(!JSON.stringify(view).includes("bot"));
  }
});

Deno.test("describeMcpServer() leaves a URL without query or credentials as it is", () => {
  const view = describeMcpServer(oneRemote(remote("http", { url: "http://127.0.0.1:3000/mcp" })));
  assert.equal(view.url, "http://127.0.0.1:3000/mcp");
  assert.equal(
    describeMcpServer(oneRemote(remote("http", { url: "https://user@h.example/" }))).url,
    "https://h.example/",
  );
});

Deno.test("a URL's user name and password become an Authorization: Basic header", () => {
  const server = oneRemote(remote("http", {
    url: `http://bot%40home:${SECRET}%3A%C3%A9@127.0.0.1:3000/mcp?token=${SECRET}`,
    headers: [{ name: "X-Trace", value: "1" }],
  }));
  assert.equal(server.url, `http://127.0.0.1:3000/mcp?token=${SECRET}`);
  assert.deepEqual({ ...server.headers }, {
    "X-Trace": "1",
    Authorization: `Basic ${
      btoa(String.fromCharCode(...new TextEncoder().encode(`bot@home:${SECRET}:é`)))
    }`,
  });
  assert.ok(Object.isFrozen(server.headers));
  // A user name alone, and a password alone.
  assert.equal(
    oneRemote(remote("sse", { url: "https://me@h.example/sse" })).headers.Authorization,
    `Basic ${btoa("me:")}`,
  );
  const passwordOnly = oneRemote(remote("http", { url: `https://:${SECRET}@h.example/` }));
  assert.equal(passwordOnly.url, "https://h.example/");
  assert.equal(passwordOnly.headers.Authorization, `Basic ${btoa(`:${SECRET}`)}`);
  // Without credentials the URL is kept as written and no header is added.
  const plain = oneRemote(remote("http", { url: "http://127.0.0.1:3000/mcp?token=t" }));
  assert.equal(plain.url, "http://127.0.0.1:3000/mcp?token=t");
  assert.deepEqual(Object.keys(plain.headers), []);
});

Deno.test("a URL with a user name or password beside an Authorization header is refused", () => {
  for (const name of ["Authorization", "authorization", "AUTHORIZATION"]) {
    const message = refused(
      [remote("http", {
        url: `https://bot:${SECRET}@docs.example/mcp?token=${SECRET}`,
        headers: [{ name, value: `Bearer ${SECRET}` }],
      })],
      /mcpServers\[0\]\.url: must not have a user name or password when headers has an Authorization header/,
    );
    assert.ok(!message.includes("bot"), message);
    assert.ok(!message.includes("docs.example"), message);
  }
});
