/**
 * The fixed hostile requests of the `http` scenario: tables of probes (bodies, content types,
 * lengths, ids, headers, verbs, paths), each row a request and the statuses it may get.
 *
 * @module
 */
import { Buffer } from "node:buffer";
import { bearer, INITIALIZE, rawRequest } from "../../http_client.ts";
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

/** The rows so far, the shared bodies and headers, and the helpers that add a row. */
function tables(env: Env, victims: Victims, rng: Rng) {
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
  const probes: Array<() => Probe> = [];
  const fetchProbe = (
    label: string,
    method: string,
    path: string,
    headers: Lazy<Record<string, string>>,
    body?: Lazy<NonNullable<FetchProbe["body"]>>,
    expect?: readonly number[],
  ): void => {
    probes.push(() => ({
      kind: "fetch",
      label,
      method,
      path,
      headers: made(headers),
      ...(body === undefined ? {} : { body: made(body) }),
      ...(expect === undefined ? {} : { expect }),
    }));
  };

  const A = `Authorization: Bearer ${target.token}`;
  const J = "Content-Type: application/json";
  const C = (): string => `Acp-Connection-Id: ${victims.acp.connectionId}`;
  const raw = (
    label: string,
    pieces: Lazy<ReadonlyArray<string | Uint8Array>>,
    extra: Omit<RawProbe, "kind" | "label" | "pieces"> = {},
  ): void => {
    probes.push(() => ({
      kind: "raw",
      label,
      pieces: made(pieces),
      ...extra,
      // Loose probes may get no answer at all: a short wait; an expected answer gets 10 s.
      options: { waitMs: extra.expect ? 10_000 : 3_000, ...extra.options },
    }));
  };
  const post = (headers: readonly string[], body?: string, length = true): string =>
    rawRequest(target, "POST /acp HTTP/1.1", [A, J, ...headers], body, { length });
  return {
    probes,
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
    fetchProbe,
    A,
    J,
    C,
    raw,
    post,
  };
}

/** See {@link tables}. */
type Tables = ReturnType<typeof tables>;

/** Bodies on /acp without a connection, on the victim's connection, and on a URL key. */
function bodyProbes(t: Tables): void {
  const { rng, json, keyed, victimJson, init, list, fetchProbe } = t;
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
  for (const [what, body, expect] of bodies) {
    fetchProbe(`POST /acp, no connection: ${what}`, "POST", "/acp", json, body, expect);
    fetchProbe(`POST /acp, victim connection: ${what}`, "POST", "/acp", victimJson, body, expect);
    fetchProbe(
      `POST /v1/acp/<victim>: ${what}`,
      "POST",
      `/v1/acp/${keyed.key}`,
      json,
      body,
      expect,
    );
  }
}

/** Wrong and missing content types. */
function contentTypeProbes(t: Tables): void {
  const { auth, keyed, init, list, fetchProbe } = t;
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
  for (const [what, type, expect] of types) {
    fetchProbe(`POST /acp as ${what}`, "POST", "/acp", { ...auth, ...type }, init, expect);
    fetchProbe(
      `POST /v1/acp as ${what}`,
      "POST",
      `/v1/acp/${keyed.key}`,
      { ...auth, ...type },
      list,
      expect,
    );
  }
  // No Content-Type at all (a byte body gets none from fetch).
  const bytes = new TextEncoder().encode(init);
  fetchProbe("POST /acp without a Content-Type", "POST", "/acp", auth, bytes, [415]);
  fetchProbe("POST /v1/acp without a Content-Type", "POST", `/v1/acp/${keyed.key}`, auth, bytes, [
    415,
  ]);
}

/** Bodies over the limit: declared, and streamed without a length. */
function limitProbes(t: Tables): void {
  const { json, keyed, victimJson, big, fetchProbe } = t;
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
  fetchProbe("POST /acp over the limit", "POST", "/acp", json, big, [413, 0]);
  fetchProbe("POST /acp over the limit, victim connection", "POST", "/acp", victimJson, big, [
    413,
    0,
  ]);
  fetchProbe("POST /v1/acp over the limit", "POST", `/v1/acp/${keyed.key}`, json, big, [413, 0]);
  fetchProbe("POST /acp streamed over the limit", "POST", "/acp", json, streamed, [413, 0]);
  fetchProbe(
    "POST /v1/acp streamed over the limit",
    "POST",
    `/v1/acp/${keyed.key}`,
    json,
    streamed,
    [413, 0],
  );
}

/** Connection and session ids: unknown, overlong, garbage, another's. */
function idProbes(t: Tables): void {
  const { victims, rng, auth, json, victimJson, init, list, fetchProbe } = t;
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
  for (const [what, id, expect] of ids) {
    fetchProbe(
      `POST /acp with ${what}`,
      "POST",
      "/acp",
      { ...json, "acp-connection-id": id },
      list,
      expect,
    );
    fetchProbe(
      `GET /acp with ${what}`,
      "GET",
      "/acp",
      {
        ...auth,
        "acp-connection-id": id,
        accept: "text/event-stream",
      },
      undefined,
      [...expect, 400, 404],
    );
    fetchProbe(
      `DELETE /acp with ${what}`,
      "DELETE",
      "/acp",
      { ...auth, "acp-connection-id": id },
      undefined,
      [...expect, 400, 404],
    );
  }
  fetchProbe(
    "POST /acp, session header not the params' session",
    "POST",
    "/acp",
    () => ({ ...victimJson(), "acp-session-id": "other" }),
    () => prompt(victims.session),
    [400],
  );
  fetchProbe(
    "POST /acp, a 2,000-character session id",
    "POST",
    "/acp",
    () => ({ ...victimJson(), "acp-session-id": "s".repeat(2000) }),
    prompt("s".repeat(2000)),
    [400],
  );
  fetchProbe(
    "POST /acp, an unknown session",
    "POST",
    "/acp",
    () => ({ ...victimJson(), "acp-session-id": "unknown-session" }),
    prompt("unknown-session"),
    [202],
  );
  fetchProbe(
    "POST /acp, session/prompt without a session header",
    "POST",
    "/acp",
    victimJson,
    () => prompt(victims.session),
    [400],
  );
  fetchProbe("POST /acp, initialize on an open connection", "POST", "/acp", victimJson, init, [
    400,
  ]);
}

/** GETs without (the right) Accept, second readers, DELETEs of nothing. */
function acceptProbes(t: Tables): void {
  const { auth, victimHeaders, fetchProbe } = t;
  fetchProbe("GET /acp, victim, Accept */*", "GET", "/acp", victimHeaders, undefined, [406]);
  fetchProbe(
    "GET /acp, victim, Accept text/html",
    "GET",
    "/acp",
    () => ({ ...victimHeaders(), accept: "text/html" }),
    undefined,
    [406],
  );
  fetchProbe(
    "GET /acp, no connection",
    "GET",
    "/acp",
    { ...auth, accept: "text/event-stream" },
    undefined,
    [400],
  );
  fetchProbe(
    "GET /acp, victim, a second reader",
    "GET",
    "/acp",
    () => ({ ...victimHeaders(), accept: "text/event-stream" }),
    undefined,
    [409],
  );
  fetchProbe("GET /v1/acp, Accept */*", "GET", "/v1/acp/fz-accept", auth, undefined, [406]);
  fetchProbe(
    "GET /v1/acp, Accept application/json",
    "GET",
    "/v1/acp/fz-accept",
    { ...auth, accept: "application/json" },
    undefined,
    [406],
  );
  fetchProbe(
    "GET /v1/acp, garbage Last-Event-ID",
    "GET",
    "/v1/acp/fz-last",
    {
      ...auth,
      accept: "text/event-stream",
      "last-event-id": "-1e999 \u00ff",
    },
    undefined,
    [200],
  );
  fetchProbe("DELETE /acp, no connection", "DELETE", "/acp", auth, undefined, [400]);
  fetchProbe("DELETE /v1/acp, never opened", "DELETE", "/v1/acp/fz-never", auth, undefined, [404]);
}

/** Every verb, and random paths. */
function verbProbes(t: Tables): void {
  const { auth, json, init, list, fetchProbe } = t;
  for (const method of ["PUT", "PATCH", "PROPFIND", "FOO", "MKCOL"]) {
    // Parsers may refuse a method they do not know: Node.js with 400, Bun by closing.
    const expect = method === "FOO" ? [405, 400, 501, 0] : [405];
    fetchProbe(`${method} /acp`, method, "/acp", json, list, expect);
    fetchProbe(`${method} /v1/acp`, method, "/v1/acp/fz-verbs", json, list, expect);
    fetchProbe(`${method} /v1/rpc`, method, "/v1/rpc", json, list, expect);
  }
  for (const method of ["HEAD", "OPTIONS"]) {
    for (const path of ["/acp", "/v1/acp/fz-verbs", "/health", "/nowhere"]) {
      fetchProbe(`${method} ${path}`, method, path, auth);
    }
  }
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
  for (const [path, expect] of paths) {
    fetchProbe(`GET ${path.slice(0, 40)}`, "GET", path, auth, undefined, expect);
    fetchProbe(`POST ${path.slice(0, 40)}`, "POST", path, json, init, expect);
  }
}

/** Raw requests that lie about their length or break the framing. */
function rawLengthProbes(t: Tables): void {
  const { init, list, big, C, raw, post } = t;
  // Once answered 500 by the SDK (seed 454368, fuzz 168): an initialize with an array id.
  raw("initialize whose id is an array, empty Acp-Connection-Id", [
    post(["Acp-Connection-Id: "], init.replace('"id":"fz-init"', '"id":[]')),
  ], { expect: [400] });
  raw("Content-Length 10^15, a small body", [
    post(["Content-Length: 1000000000000000"], list, false),
  ], {
    expect: [413, 400],
  });
  raw("Content-Length beyond 2^64", [
    post(["Content-Length: 99999999999999999999999"], list, false),
  ]);
  raw("Content-Length -1", [post(["Content-Length: -1"], list, false)]);
  raw("Content-Length not a number", [post(["Content-Length: abc"], list, false)]);
  raw("two Content-Lengths", [
    post(["Content-Length: 5", `Content-Length: ${list.length}`], list, false),
  ]);
  raw("Content-Length and chunked", [
    post(
      ["Content-Length: 5", "Transfer-Encoding: chunked"],
      `${list.length.toString(16)}\r\n${list}\r\n0\r\n\r\n`,
      false,
    ),
  ]);
  raw("Content-Length 100, 10 bytes, half-close", [
    post(["Content-Length: 100"], list.slice(0, 10), false),
  ], {
    options: { hangUp: "end" },
  });
  raw("Content-Length 100, 10 bytes, then gone", [
    post(["Content-Length: 100"], list.slice(0, 10), false),
  ], {
    options: { hangUp: "destroy", hangUpAfterMs: 200 },
  });
  raw("Content-Length 5, a longer body", [post(["Content-Length: 5"], list, false)]);
  raw("chunked, a bad chunk size", [
    post(["Transfer-Encoding: chunked"], "zz\r\nabc\r\n0\r\n\r\n", false),
  ]);
  raw("chunked, a 2^64-1 chunk, then gone", [
    post(["Transfer-Encoding: chunked"], "ffffffffffffffff\r\nabc", false),
  ], {
    options: { hangUp: "destroy", hangUpAfterMs: 300 },
  });
  const chunk = "a".repeat(65536);
  raw("chunked over the limit", [
    post(["Transfer-Encoding: chunked"], `${`10000\r\n${chunk}\r\n`.repeat(20)}0\r\n\r\n`, false),
  ], {
    expect: [413, 0],
    options: { waitMs: 10_000 },
  });
  raw("Content-Length over the limit", [post([], big)], {
    expect: [413, 0],
    options: { waitMs: 10_000 },
  });
  raw(
    "a bare LF in a header value",
    () => [post([C(), "Acp-Session-Id: s\nX-Injected: 1"], list)],
    {
      injected: true,
    },
  );
  raw(
    "a bare CR in a header value",
    () => [post([C(), "Acp-Session-Id: s\rX-Injected: 1"], list)],
    {
      injected: true,
    },
  );
}

/** Raw requests with injected, broken or huge heads and request lines. */
function rawHeadProbes(t: Tables): void {
  const { target, list, A, J, C, raw, post } = t;
  raw("an obs-fold header", () => [post([C(), "Acp-Session-Id: s", " X-Injected: 1"], list)], {
    injected: true,
  });
  raw("CRLF in the request target", [
    `GET /health%0d%0aX-Injected:%201 HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\nConnection: close\r\n\r\n`,
  ], { injected: true });
  raw("a NUL in a header value", () => [post([C(), "Acp-Session-Id: s\0s"], list)]);
  raw("DEL and high bytes in a header value", [post([`Acp-Connection-Id: \x7f\x80\xff`], list)]);
  raw("a header without a colon", [post(["Acp-Connection-Id"], list)]);
  raw("a header name with a space", [post(["Bad Name: x"], list)]);
  raw("a 200 KB header", [post([`X-Big: ${"b".repeat(200_000)}`], list)]);
  raw("5,000 headers", [
    post(Array.from({ length: 5000 }, (_, index) => `X-H${index}: ${index}`), list),
  ]);
  raw("a garbage request line", ["GARBAGE\r\n\r\n"]);
  raw("no HTTP version", ["GET /health\r\n\r\n"]);
  raw("HTTP/9.9", [`GET /health HTTP/9.9\r\nHost: ${target.host}:${target.port}\r\n\r\n`]);
  raw("the HTTP/2 preface", ["PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"]);
  raw("HTTP/1.0 without Host", ["GET /acp HTTP/1.0\r\n\r\n"]);
  raw("no Host", [rawRequest(target, "POST /acp HTTP/1.1", [A, J], list, { host: false })], {
    expect: [400, 403],
  });
  raw("Host evil.example", [
    rawRequest(target, "POST /acp HTTP/1.1", ["Host: evil.example", A, J], list, { host: false }),
  ], { expect: [403] });
  raw("Host 127.0.0.1.evil.example", [
    rawRequest(target, "POST /acp HTTP/1.1", ["Host: 127.0.0.1.evil.example", A, J], list, {
      host: false,
    }),
  ], { expect: [403] });
  raw("two Hosts", [post(["Host: evil.example"], list)], { no2xx: true });
  raw("an absolute URI of another host", [
    rawRequest(target, "POST http://evil.example/acp HTTP/1.1", [A, J], list),
  ]);
  raw("a 100 KB path", [rawRequest(target, `GET /${"p".repeat(100_000)} HTTP/1.1`, [A])]);
  raw("a lower-case method", [rawRequest(target, "get /health HTTP/1.1", [A])]);
  raw("TRACE", () => [rawRequest(target, "TRACE /acp HTTP/1.1", [A, C()])], { no2xx: true });
  raw("CONNECT", [rawRequest(target, `CONNECT ${target.host}:22 HTTP/1.1`, [A])], { no2xx: true });
  raw("pipelined: /health, then garbage", [
    `${
      rawRequest(target, "GET /health HTTP/1.1", [], undefined, { close: false })
    }GARBAGE /\r\n\r\n`,
  ]);
  const slow = post([], list);
  raw("slowloris: a byte at a time, then gone", [...slow.slice(0, 60)], {
    options: { pauseMs: 10, hangUp: "destroy", hangUpAfterMs: 100 },
  });
  raw("Expect: 100-continue, then no body", [
    post(["Expect: 100-continue", "Content-Length: 100"], "", false),
  ]);
  raw("Upgrade: h2c", [post(["Upgrade: h2c", "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA"], list)]);
  raw("Transfer-Encoding: gzip", [post(["Transfer-Encoding: gzip"], list)]);
  raw("Content-Encoding: gzip, a plain body", () => [post([C(), "Content-Encoding: gzip"], list)]);
  raw("GET /acp without Accept", () => [rawRequest(target, "GET /acp HTTP/1.1", [A, C()])], {
    expect: [406],
  });
  raw("GET /v1/acp without Accept", [rawRequest(target, "GET /v1/acp/fz-raw HTTP/1.1", [A])], {
    expect: [406],
  });
  raw("headers, then gone", [post(["Content-Length: 50"], undefined, false)], {
    options: { hangUp: "destroy", hangUpAfterMs: 100 },
  });
  raw("UTF-8 in the request target", [
    Buffer.concat([
      Buffer.from("GET /v1/acp/"),
      Buffer.from("\u00e9\u6f22", "utf8"),
      Buffer.from(
        ` HTTP/1.1\r\nHost: ${target.host}:${target.port}\r\n${A}\r\nConnection: close\r\n\r\n`,
      ),
    ]),
  ]);
}

/** The fixed hostile requests (fetch and raw), table by table, in a fixed order. */
export function fixedProbes(env: Env, victims: Victims, rng: Rng): Array<() => Probe> {
  const t = tables(env, victims, rng);
  bodyProbes(t);
  contentTypeProbes(t);
  limitProbes(t);
  idProbes(t);
  acceptProbes(t);
  verbProbes(t);
  rawLengthProbes(t);
  rawHeadProbes(t);
  return t.probes;
}
