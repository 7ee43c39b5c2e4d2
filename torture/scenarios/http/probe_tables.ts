/**
 * The fixed hostile requests of the `http` scenario: tables of probes (bodies, content types,
 * lengths, ids, headers, verbs, paths), each row a request and the statuses it may get.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import {
  bearer,
  INITIALIZE,
  type KeyedClient,
  rawRequest,
  type Target,
} from "../../http_client.ts";
import { type Env, fakeUuid, LIMIT, randomBytes, type Rng } from "./_shared.ts";
import {
  deepParams,
  type FetchProbe,
  type Lazy,
  made,
  type Probe,
  type RawProbe,
  type Victims,
} from "./probes.ts";

/** A fixed fetch probe as a row of a table: its headers and body may be made when it runs. */
interface FetchRow {
  readonly kind: "fetch";
  readonly label: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Lazy<Record<string, string>>;
  readonly body?: Lazy<NonNullable<FetchProbe["body"]>>;
  /** Left out: any status but a 5xx (501, 503 and 505 excepted). */
  readonly expect?: readonly number[] | undefined;
}

/** A fixed raw probe as a row of a table: its bytes may be made when it runs. */
interface RawRow extends Omit<RawProbe, "pieces"> {
  readonly pieces: Lazy<ReadonlyArray<string | Uint8Array>>;
}

/** A row of the fixed probe tables. */
type Row = FetchRow | RawRow;

/** The probe a row stands for, made when it runs (the victims may have been replaced). */
function probeOf(row: Row): Probe {
  if (row.kind === "fetch") {
    return {
      kind: "fetch",
      label: row.label,
      method: row.method,
      path: row.path,
      headers: made(row.headers),
      ...(row.body === undefined ? {} : { body: made(row.body) }),
      ...(row.expect === undefined ? {} : { expect: row.expect }),
    };
  }
  return {
    ...row,
    pieces: made(row.pieces),
    // Loose probes may get no answer at all: a short wait; an expected answer gets 10 s.
    options: { waitMs: row.expect ? 10_000 : 3_000, ...row.options },
  };
}

/** What the tables are built from: the target, the victims, shared bodies and headers. */
interface Tables {
  readonly env: Env;
  readonly victims: Victims;
  readonly rng: Rng;
  readonly target: Target;
  /** The right `Authorization` header. */
  readonly auth: Record<string, string>;
  /** {@link auth} and a JSON content type. */
  readonly json: Record<string, string>;
  readonly keyed: KeyedClient;
  /** The `/acp` victim's headers, made when the probe runs. */
  readonly victimHeaders: () => Record<string, string>;
  readonly victimJson: () => Record<string, string>;
  /** An `initialize`, a `session/list`, and a `session/list` over the limit. */
  readonly init: string;
  readonly list: string;
  readonly big: string;
  /** Raw header lines: the token, a JSON content type, the victim's connection id. */
  readonly A: string;
  readonly J: string;
  readonly C: () => string;
  /** A raw `POST /acp` with the token, the JSON type and `headers`. */
  readonly post: (headers: readonly string[], body?: string, length?: boolean) => string;
}

/** Builds {@link Tables}. */
function tables(env: Env, victims: Victims, rng: Rng): Tables {
  const target = env.target;
  const auth = bearer(target);
  const json = { ...auth, "content-type": "application/json" };
  const keyed = victims.keyed;
  const victimHeaders = (): Record<string, string> => victims.acp.headers();
  const victimJson = (): Record<string, string> => ({
    ...victims.acp.headers(),
    "content-type": "application/json",
  });
  const init = JSON.stringify({
    jsonrpc: "2.0",
    id: "fz-init",
    method: "initialize",
    params: INITIALIZE,
  });
  const list = JSON.stringify({
    jsonrpc: "2.0",
    id: "fz-list",
    method: "session/list",
    params: {},
  });
  const big = JSON.stringify({
    jsonrpc: "2.0",
    id: "fz-big",
    method: "session/list",
    params: { cwd: "x".repeat(LIMIT + 1000) },
  });
  const A = `Authorization: Bearer ${target.token}`;
  const J = "Content-Type: application/json";
  const C = (): string => `Acp-Connection-Id: ${victims.acp.connectionId}`;
  const post = (headers: readonly string[], body?: string, length = true): string =>
    rawRequest(target, "POST /acp HTTP/1.1", [A, J, ...headers], body, { length });
  return {
    env,
    victims,
    rng,
    target,
    auth,
    json,
    keyed,
    victimHeaders,
    victimJson,
    init,
    list,
    big,
    A,
    J,
    C,
    post,
  };
}

/** Bodies on /acp without a connection, on the victim's connection, and on a URL key. */
function bodyProbes(t: Tables): Row[] {
  const { rng, json, keyed, victimJson, init, list } = t;
  const bodies: Array<[string, string, readonly number[] | undefined]> = [
    ["an empty body", "", [400]],
    ["truncated JSON", init.slice(0, 30), [400]],
    ["not JSON", "hello", [400]],
    ["a number", "1", [400]],
    ["a string", '"x"', [400]],
    ["null", "null", [400]],
    ["an empty batch", "[]", [400]],
    ["a batch", `[${list},${list}]`, [400]],
    ["a 200,000-deep array", "[".repeat(200_000), [400]],
    ["a 200,000-deep closed array", "[".repeat(200_000) + "]".repeat(200_000), [400]],
    ["a 50,000-deep object", '{"a":'.repeat(50_000) + "1" + "}".repeat(50_000), undefined],
    ["50,000-deep params", deepParams, undefined],
    ["__proto__ keys", '{"__proto__":{"jsonrpc":"2.0"},"constructor":{"prototype":{}}}', undefined],
    ["jsonrpc 1.0", '{"jsonrpc":"1.0","id":"fz-1","method":"session/list","params":{}}', undefined],
    ["an object id", '{"jsonrpc":"2.0","id":{},"method":"session/list","params":{}}', undefined],
    ["a numeric method", '{"jsonrpc":"2.0","id":"fz-2","method":7}', undefined],
    [
      "string params",
      '{"jsonrpc":"2.0","id":"fz-3","method":"session/new","params":"x"}',
      undefined,
    ],
    ["a stray response", '{"jsonrpc":"2.0","id":"fz-4","result":{}}', undefined],
    ["random bytes", randomBytes(rng, 2000), [400]],
    ["NUL bytes", "\0".repeat(100), [400]],
    ["a BOM then JSON", `\ufeff${list}`, undefined],
    [
      "a lone surrogate",
      '{"jsonrpc":"2.0","id":"fz-6","method":"session/list","params":{"cwd":"\\ud800"}}',
      undefined,
    ],
    [
      "a body just under the limit",
      JSON.stringify({
        jsonrpc: "2.0",
        id: "fz-7",
        method: "session/list",
        params: { cwd: "x".repeat(LIMIT - 200) },
      }),
      undefined,
    ],
  ];
  return [
    ...bodies.flatMap(([what, body, expect]): Row[] => [
      {
        kind: "fetch",
        label: `POST /acp, no connection: ${what}`,
        method: "POST",
        path: "/acp",
        headers: json,
        body,
        expect,
      },
      {
        kind: "fetch",
        label: `POST /acp, victim connection: ${what}`,
        method: "POST",
        path: "/acp",
        headers: victimJson,
        body,
        expect,
      },
      {
        kind: "fetch",
        label: `POST /v1/acp/<victim>: ${what}`,
        method: "POST",
        path: `/v1/acp/${keyed.key}`,
        headers: json,
        body,
        expect,
      },
    ]),
  ];
}

/** Wrong and missing content types. */
function contentTypeProbes(t: Tables): Row[] {
  const { auth, keyed, init, list } = t;
  const types: Array<[string, Record<string, string>, readonly number[] | undefined]> = [
    ["text/plain", { "content-type": "text/plain" }, [415]],
    ["form", { "content-type": "application/x-www-form-urlencoded" }, [415]],
    ["multipart", { "content-type": "multipart/form-data; boundary=x" }, [415]],
    ["application/jsonl", { "content-type": "application/jsonl" }, [415]],
    ["application/json-seq", { "content-type": "application/json-seq" }, [415]],
    ["problem+json", { "content-type": "application/problem+json" }, [415]],
    ["upper case JSON", { "content-type": "APPLICATION/JSON; CHARSET=UTF-8" }, undefined],
    ["JSON as UTF-16", { "content-type": "application/json; charset=utf-16" }, undefined],
    ["two types", { "content-type": "application/json, text/plain" }, undefined],
  ];
  const bytes = new TextEncoder().encode(init);
  return [
    ...types.flatMap(([what, type, expect]): Row[] => [
      {
        kind: "fetch",
        label: `POST /acp as ${what}`,
        method: "POST",
        path: "/acp",
        headers: { ...auth, ...type },
        body: init,
        expect,
      },
      {
        kind: "fetch",
        label: `POST /v1/acp as ${what}`,
        method: "POST",
        path: `/v1/acp/${keyed.key}`,
        headers: { ...auth, ...type },
        body: list,
        expect,
      },
    ]),
    // No Content-Type at all (a byte body gets none from fetch).
    {
      kind: "fetch",
      label: "POST /acp without a Content-Type",
      method: "POST",
      path: "/acp",
      headers: auth,
      body: bytes,
      expect: [415],
    },
    {
      kind: "fetch",
      label: "POST /v1/acp without a Content-Type",
      method: "POST",
      path: `/v1/acp/${keyed.key}`,
      headers: auth,
      body: bytes,
      expect: [
        415,
      ],
    },
  ];
}

/** Bodies over the limit: declared, and streamed without a length. */
function limitProbes(t: Tables): Row[] {
  const { json, keyed, victimJson, big } = t;
  const streamed = (): ReadableStream<Uint8Array> => {
    let sent = 0;
    const chunk = new Uint8Array(64 * 1024).fill(0x61);
    return new ReadableStream({
      pull(controller) {
        if (sent > LIMIT + 128 * 1024) return controller.close();
        sent += chunk.length;
        controller.enqueue(chunk);
      },
    });
  };
  return [
    {
      kind: "fetch",
      label: "POST /acp over the limit",
      method: "POST",
      path: "/acp",
      headers: json,
      body: big,
      expect: [413, 0],
    },
    {
      kind: "fetch",
      label: "POST /acp over the limit, victim connection",
      method: "POST",
      path: "/acp",
      headers: victimJson,
      body: big,
      expect: [
        413,
        0,
      ],
    },
    {
      kind: "fetch",
      label: "POST /v1/acp over the limit",
      method: "POST",
      path: `/v1/acp/${keyed.key}`,
      headers: json,
      body: big,
      expect: [413, 0],
    },
    {
      kind: "fetch",
      label: "POST /acp streamed over the limit",
      method: "POST",
      path: "/acp",
      headers: json,
      body: streamed,
      expect: [413, 0],
    },
    {
      kind: "fetch",
      label: "POST /v1/acp streamed over the limit",
      method: "POST",
      path: `/v1/acp/${keyed.key}`,
      headers: json,
      body: streamed,
      expect: [413, 0],
    },
  ];
}

/** Connection and session ids: unknown, overlong, garbage, another's. */
function idProbes(t: Tables): Row[] {
  const { victims, rng, auth, json, victimJson, init, list } = t;
  const prompt = (sessionId: string): string =>
    JSON.stringify({
      jsonrpc: "2.0",
      id: "fz-p",
      method: "session/prompt",
      params: { sessionId, prompt: [{ type: "text", text: "x" }] },
    });
  const ids: Array<[string, string, readonly number[]]> = [
    ["an unknown connection id", fakeUuid(rng), [404]],
    ["a 2,000-character connection id", "c".repeat(2000), [400, 404]],
    ["an empty connection id", "", [400]],
    ["a path as connection id", "../../etc/passwd", [404]],
    ["a latin1 connection id", "\u00e9\u00ff\u00a0x", [404]],
  ];
  return [
    ...ids.flatMap(([what, id, expect]): Row[] => [
      {
        kind: "fetch",
        label: `POST /acp with ${what}`,
        method: "POST",
        path: "/acp",
        headers: { ...json, "acp-connection-id": id },
        body: list,
        expect,
      },
      {
        kind: "fetch",
        label: `GET /acp with ${what}`,
        method: "GET",
        path: "/acp",
        headers: {
          ...auth,
          "acp-connection-id": id,
          accept: "text/event-stream",
        },
        expect: [...expect, 400, 404],
      },
      {
        kind: "fetch",
        label: `DELETE /acp with ${what}`,
        method: "DELETE",
        path: "/acp",
        headers: { ...auth, "acp-connection-id": id },
        expect: [...expect, 400, 404],
      },
    ]),
    {
      kind: "fetch",
      label: "POST /acp, session header not the params' session",
      method: "POST",
      path: "/acp",
      headers: () => ({ ...victimJson(), "acp-session-id": "other" }),
      body: () => prompt(victims.session),
      expect: [400],
    },
    {
      kind: "fetch",
      label: "POST /acp, a 2,000-character session id",
      method: "POST",
      path: "/acp",
      headers: () => ({ ...victimJson(), "acp-session-id": "s".repeat(2000) }),
      body: prompt("s".repeat(2000)),
      expect: [400],
    },
    {
      kind: "fetch",
      label: "POST /acp, an unknown session",
      method: "POST",
      path: "/acp",
      headers: () => ({ ...victimJson(), "acp-session-id": "unknown-session" }),
      body: prompt("unknown-session"),
      expect: [202],
    },
    {
      kind: "fetch",
      label: "POST /acp, session/prompt without a session header",
      method: "POST",
      path: "/acp",
      headers: victimJson,
      body: () => prompt(victims.session),
      expect: [400],
    },
    {
      kind: "fetch",
      label: "POST /acp, initialize on an open connection",
      method: "POST",
      path: "/acp",
      headers: victimJson,
      body: init,
      expect: [
        400,
      ],
    },
  ];
}

/** GETs without (the right) Accept, second readers, DELETEs of nothing. */
function acceptProbes(t: Tables): Row[] {
  const { auth, victimHeaders } = t;
  return [
    {
      kind: "fetch",
      label: "GET /acp, victim, Accept */*",
      method: "GET",
      path: "/acp",
      headers: victimHeaders,
      expect: [406],
    },
    {
      kind: "fetch",
      label: "GET /acp, victim, Accept text/html",
      method: "GET",
      path: "/acp",
      headers: () => ({ ...victimHeaders(), accept: "text/html" }),
      expect: [406],
    },
    {
      kind: "fetch",
      label: "GET /acp, no connection",
      method: "GET",
      path: "/acp",
      headers: { ...auth, accept: "text/event-stream" },
      expect: [400],
    },
    {
      kind: "fetch",
      label: "GET /acp, victim, a second reader",
      method: "GET",
      path: "/acp",
      headers: () => ({ ...victimHeaders(), accept: "text/event-stream" }),
      expect: [409],
    },
    {
      kind: "fetch",
      label: "GET /v1/acp, Accept */*",
      method: "GET",
      path: "/v1/acp/fz-accept",
      headers: auth,
      expect: [406],
    },
    {
      kind: "fetch",
      label: "GET /v1/acp, Accept application/json",
      method: "GET",
      path: "/v1/acp/fz-accept",
      headers: { ...auth, accept: "application/json" },
      expect: [406],
    },
    {
      kind: "fetch",
      label: "GET /v1/acp, garbage Last-Event-ID",
      method: "GET",
      path: "/v1/acp/fz-last",
      headers: {
        ...auth,
        accept: "text/event-stream",
        "last-event-id": "-1e999 \u00ff",
      },
      expect: [200],
    },
    {
      kind: "fetch",
      label: "DELETE /acp, no connection",
      method: "DELETE",
      path: "/acp",
      headers: auth,
      expect: [400],
    },
    {
      kind: "fetch",
      label: "DELETE /v1/acp, never opened",
      method: "DELETE",
      path: "/v1/acp/fz-never",
      headers: auth,
      expect: [404],
    },
  ];
}

/** Every verb, and random paths. */
function verbProbes(t: Tables): Row[] {
  const { auth, json, init, list } = t;
  const paths: Array<[string, readonly number[] | undefined]> = [
    ["/", [404]],
    ["/acp/", undefined],
    ["/ACP", undefined],
    ["/v1/acp", undefined],
    ["/v1/acp/", undefined],
    ["/v1/acp/a/b", [404]],
    [`/v1/acp/${"k".repeat(129)}`, [400]],
    ["/v1/acp/%00", [400]],
    ["/v1/acp/k%20k", [400]],
    ["/v1/acp/%2e%2e", undefined],
    ["/v1/acp/..%2f..%2fhealth", undefined],
    ["/health/", undefined],
    ["/health?x=1", undefined],
    ["/%ff", undefined],
    ["/v1/rpc/x", [404]],
    ["/acp?x=1", undefined],
    [`/${"a".repeat(8000)}`, undefined],
  ];
  return [
    ...["PUT", "PATCH", "PROPFIND", "FOO", "MKCOL"].flatMap((method): Row[] => {
      // Parsers may refuse a method they do not know: Node.js with 400, Bun by closing.
      const expect = method === "FOO" ? [405, 400, 501, 0] : [405];
      return [
        {
          kind: "fetch",
          label: `${method} /acp`,
          method,
          path: "/acp",
          headers: json,
          body: list,
          expect,
        },
        {
          kind: "fetch",
          label: `${method} /v1/acp`,
          method,
          path: "/v1/acp/fz-verbs",
          headers: json,
          body: list,
          expect,
        },
        {
          kind: "fetch",
          label: `${method} /v1/rpc`,
          method,
          path: "/v1/rpc",
          headers: json,
          body: list,
          expect,
        },
      ];
    }),
    ...["HEAD", "OPTIONS"].flatMap((method): Row[] => [
      ...["/acp", "/v1/acp/fz-verbs", "/health", "/nowhere"].flatMap((path): Row[] => [
        { kind: "fetch", label: `${method} ${path}`, method: method, path: path, headers: auth },
      ]),
    ]),
    ...paths.flatMap(([path, expect]): Row[] => [
      {
        kind: "fetch",
        label: `GET ${path.slice(0, 40)}`,
        method: "GET",
        path,
        headers: auth,
        expect,
      },
      {
        kind: "fetch",
        label: `POST ${path.slice(0, 40)}`,
        method: "POST",
        path,
        headers: json,
        body: init,
        expect,
      },
    ]),
  ];
}

/** Raw requests that lie about their length or break the framing. */
function rawLengthProbes(t: Tables): Row[] {
  const { init, list, big, C, post } = t;
  const chunk = "a".repeat(65536);
  return [
    // Once answered 500 by the SDK (seed 454368, fuzz 168): an initialize with an array id.
    {
      kind: "raw",
      label: "initialize whose id is an array, empty Acp-Connection-Id",
      pieces: [
        post(["Acp-Connection-Id: "], init.replace('"id":"fz-init"', '"id":[]')),
      ],
      expect: [400],
    },
    {
      kind: "raw",
      label: "Content-Length 10^15, a small body",
      pieces: [
        post(["Content-Length: 1000000000000000"], list, false),
      ],
      expect: [413, 400],
    },
    {
      kind: "raw",
      label: "Content-Length beyond 2^64",
      pieces: [
        post(["Content-Length: 99999999999999999999999"], list, false),
      ],
    },
    {
      kind: "raw",
      label: "Content-Length -1",
      pieces: [post(["Content-Length: -1"], list, false)],
    },
    {
      kind: "raw",
      label: "Content-Length not a number",
      pieces: [post(["Content-Length: abc"], list, false)],
    },
    {
      kind: "raw",
      label: "two Content-Lengths",
      pieces: [
        post(["Content-Length: 5", `Content-Length: ${list.length}`], list, false),
      ],
    },
    {
      kind: "raw",
      label: "Content-Length and chunked",
      pieces: [
        post(
          ["Content-Length: 5", "Transfer-Encoding: chunked"],
          `${list.length.toString(16)}\r\n${list}\r\n0\r\n\r\n`,
          false,
        ),
      ],
    },
    {
      kind: "raw",
      label: "Content-Length 100, 10 bytes, half-close",
      pieces: [
        post(["Content-Length: 100"], list.slice(0, 10), false),
      ],
      options: { hangUp: "end" },
    },
    {
      kind: "raw",
      label: "Content-Length 100, 10 bytes, then gone",
      pieces: [
        post(["Content-Length: 100"], list.slice(0, 10), false),
      ],
      options: { hangUp: "destroy", hangUpAfterMs: 200 },
    },
    {
      kind: "raw",
      label: "Content-Length 5, a longer body",
      pieces: [post(["Content-Length: 5"], list, false)],
    },
    {
      kind: "raw",
      label: "chunked, a bad chunk size",
      pieces: [
        post(["Transfer-Encoding: chunked"], "zz\r\nabc\r\n0\r\n\r\n", false),
      ],
    },
    {
      kind: "raw",
      label: "chunked, a 2^64-1 chunk, then gone",
      pieces: [
        post(["Transfer-Encoding: chunked"], "ffffffffffffffff\r\nabc", false),
      ],
      options: { hangUp: "destroy", hangUpAfterMs: 300 },
    },
    {
      kind: "raw",
      label: "chunked over the limit",
      pieces: [
        post(
          ["Transfer-Encoding: chunked"],
          `${`10000\r\n${chunk}\r\n`.repeat(20)}0\r\n\r\n`,
          false,
        ),
      ],
      expect: [413, 0],
      options: { waitMs: 10_000 },
    },
    {
      kind: "raw",
      label: "Content-Length over the limit",
      pieces: [post([], big)],
      expect: [413, 0],
      options: { waitMs: 10_000 },
    },
    {
      kind: "raw",
      label: "a bare LF in a header value",
      pieces: () => [post([C(), "Acp-Session-Id: s\nX-Injected: 1"], list)],
      injected: true,
    },
    {
      kind: "raw",
      label: "a bare CR in a header value",
      pieces: () => [post([C(), "Acp-Session-Id: s\rX-Injected: 1"], list)],
      injected: true,
    },
  ];
}

/** Raw requests with injected, broken or huge headers. */
function rawHeadProbes(t: Tables): Row[] {
  const { target, list, C, post } = t;
  return [
    {
      kind: "raw",
      label: "an obs-fold header",
      pieces: () => [post([C(), "Acp-Session-Id: s", " X-Injected: 1"], list)],
      injected: true,
    },
    {
      kind: "raw",
      label: "CRLF in the request target",
      pieces: [
        `GET /health%0d%0aX-Injected:%201 HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\nConnection: close\r\n\r\n`,
      ],
      injected: true,
    },
    {
      kind: "raw",
      label: "a NUL in a header value",
      pieces: () => [post([C(), "Acp-Session-Id: s\0s"], list)],
    },
    {
      kind: "raw",
      label: "DEL and high bytes in a header value",
      pieces: [post([`Acp-Connection-Id: \x7f\x80\xff`], list)],
    },
    { kind: "raw", label: "a header without a colon", pieces: [post(["Acp-Connection-Id"], list)] },
    { kind: "raw", label: "a header name with a space", pieces: [post(["Bad Name: x"], list)] },
    {
      kind: "raw",
      label: "a 200 KB header",
      pieces: [post([`X-Big: ${"b".repeat(200_000)}`], list)],
    },
    {
      kind: "raw",
      label: "5,000 headers",
      pieces: [
        post(Array.from({ length: 5000 }, (_, index) => `X-H${index}: ${index}`), list),
      ],
    },
  ];
}

/** Raw requests with broken, odd or hostile request lines, hosts and framing. */
function rawRequestLineProbes(t: Tables): Row[] {
  const { target, list, A, J, C, post } = t;
  const slow = post([], list);
  return [
    { kind: "raw", label: "a garbage request line", pieces: ["GARBAGE\r\n\r\n"] },
    { kind: "raw", label: "no HTTP version", pieces: ["GET /health\r\n\r\n"] },
    {
      kind: "raw",
      label: "HTTP/9.9",
      pieces: [`GET /health HTTP/9.9\r\nHost: ${target.host}:${target.port}\r\n\r\n`],
    },
    { kind: "raw", label: "the HTTP/2 preface", pieces: ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"] },
    { kind: "raw", label: "HTTP/1.0 without Host", pieces: ["GET /acp HTTP/1.0\r\n\r\n"] },
    {
      kind: "raw",
      label: "no Host",
      pieces: [rawRequest(target, "POST /acp HTTP/1.1", [A, J], list, { host: false })],
      expect: [400, 403],
    },
    {
      kind: "raw",
      label: "Host evil.example",
      pieces: [
        rawRequest(target, "POST /acp HTTP/1.1", ["Host: evil.example", A, J], list, {
          host: false,
        }),
      ],
      expect: [403],
    },
    {
      kind: "raw",
      label: "Host 127.0.0.1.evil.example",
      pieces: [
        rawRequest(target, "POST /acp HTTP/1.1", ["Host: 127.0.0.1.evil.example", A, J], list, {
          host: false,
        }),
      ],
      expect: [403],
    },
    { kind: "raw", label: "two Hosts", pieces: [post(["Host: evil.example"], list)], no2xx: true },
    {
      kind: "raw",
      label: "an absolute URI of another host",
      pieces: [
        rawRequest(target, "POST http://evil.example/acp HTTP/1.1", [A, J], list),
      ],
    },
    {
      kind: "raw",
      label: "a 100 KB path",
      pieces: [rawRequest(target, `GET /${"p".repeat(100_000)} HTTP/1.1`, [A])],
    },
    {
      kind: "raw",
      label: "a lower-case method",
      pieces: [rawRequest(target, "get /health HTTP/1.1", [A])],
    },
    {
      kind: "raw",
      label: "TRACE",
      pieces: () => [rawRequest(target, "TRACE /acp HTTP/1.1", [A, C()])],
      no2xx: true,
    },
    {
      kind: "raw",
      label: "CONNECT",
      pieces: [rawRequest(target, `CONNECT ${target.host}:22 HTTP/1.1`, [A])],
      no2xx: true,
    },
    {
      kind: "raw",
      label: "pipelined: /health, then garbage",
      pieces: [
        `${
          rawRequest(target, "GET /health HTTP/1.1", [], undefined, { close: false })
        }GARBAGE /\r\n\r\n`,
      ],
    },
    {
      kind: "raw",
      label: "slowloris: a byte at a time, then gone",
      pieces: [...slow.slice(0, 60)],
      options: { pauseMs: 10, hangUp: "destroy", hangUpAfterMs: 100 },
    },
    {
      kind: "raw",
      label: "Expect: 100-continue, then no body",
      pieces: [
        post(["Expect: 100-continue", "Content-Length: 100"], "", false),
      ],
    },
    {
      kind: "raw",
      label: "Upgrade: h2c",
      pieces: [post(["Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"], list)],
    },
    {
      kind: "raw",
      label: "Transfer-Encoding: gzip",
      pieces: [post(["Transfer-Encoding: gzip"], list)],
    },
    {
      kind: "raw",
      label: "Content-Encoding: gzip, a plain body",
      pieces: () => [post([C(), "Content-Encoding: gzip"], list)],
    },
    {
      kind: "raw",
      label: "GET /acp without Accept",
      pieces: () => [rawRequest(target, "GET /acp HTTP/1.1", [A, C()])],
      expect: [406],
    },
    {
      kind: "raw",
      label: "GET /v1/acp without Accept",
      pieces: [rawRequest(target, "GET /v1/acp/fz-raw HTTP/1.1", [A])],
      expect: [406],
    },
    {
      kind: "raw",
      label: "headers, then gone",
      pieces: [post(["Content-Length: 50"], undefined, false)],
      options: { hangUp: "destroy", hangUpAfterMs: 100 },
    },
    {
      kind: "raw",
      label: "UTF-8 in the request target",
      pieces: [
        Buffer.concat([
          Buffer.from("GET /v1/acp/"),
          Buffer.from("\u00e9\u6f22", "utf8"),
          Buffer.from(
            ` HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\n${A}\r\nConnection: close\r\n\r\n`,
          ),
        ]),
      ],
    },
  ];
}

/** The fixed hostile requests (fetch and raw), table by table, in a fixed order. */
export function fixedProbes(env: Env, victims: Victims, rng: Rng): Array<() => Probe> {
  const t = tables(env, victims, rng);
  const rows = [
    ...bodyProbes(t),
    ...contentTypeProbes(t),
    ...limitProbes(t),
    ...idProbes(t),
    ...acceptProbes(t),
    ...verbProbes(t),
    ...rawLengthProbes(t),
    ...rawHeadProbes(t),
    ...rawRequestLineProbes(t),
  ];
  return rows.map((row) => () => probeOf(row));
}
