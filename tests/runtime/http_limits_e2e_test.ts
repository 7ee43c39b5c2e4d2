/**
 * The HTTP transport's limits on a real `serve --http` process on Deno, Node.js and Bun, driven
 * over raw TCP sockets on 127.0.0.1: bodies dripped one byte per segment, bodies that stall, idle
 * connections by the thousand, one address taking every connection, and request ids no number
 * holds exactly.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { join } from "node:path";
import { WebSocket as NodeWebSocket } from "ws";
import { exitWithin, listeningUrl, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

const TOKEN = "limits-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** A running server: its process, its URL, and how to stop it. */
interface Serve extends AsyncDisposable {
  readonly agent: StdioAgent;
  readonly url: string;
  readonly port: number;
  readonly pid: number;
}

/** Starts `serve --http --port 0` with a token and resolves once it is listening. */
async function serve(
  runtime: (typeof RUNTIMES)[number],
  dirs: TempDirs,
  extra: readonly string[] = [],
): Promise<Serve> {
  const data = await dirs.make();
  const script = join(data, "script.json");
  await writeFile(script, JSON.stringify([{ text: "hi" }]));
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    "serve",
    "--http",
    "--port",
    "0",
    "--data-dir",
    data,
    "--model",
    "scripted",
    "--script",
    script,
    "--token",
    TOKEN,
    "--log-level",
    "info",
    ...extra,
  ]);
  const url = await listeningUrl(agent);
  return {
    agent,
    url,
    port: Number(new URL(url).port),
    pid: agent.child.pid!,
    async [Symbol.asyncDispose]() {
      agent.child.kill("SIGTERM");
      if ((await exitWithin(agent, 10_000)) === null) agent.child.kill("SIGKILL");
      await agent.exited;
    },
  };
}

/** The resident memory of a process, in MiB. */
function rssMiB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kib = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1]);
  return kib / 1024;
}

/** A raw TCP connection to the server, with Nagle off: every write is its own segment. */
class RawConnection {
  readonly socket: Socket;
  #received = "";
  #wake: (() => void) | undefined;
  readonly closed: Promise<void>;

  constructor(port: number) {
    this.socket = connect({ host: "127.0.0.1", port, noDelay: true });
    this.socket.setNoDelay(true);
    this.socket.setEncoding("latin1");
    this.socket.on("data", (text: string) => {
      this.#received += text;
      this.#wake?.();
    });
    this.socket.on("error", () => {});
    this.closed = new Promise((resolve) => this.socket.once("close", () => resolve()));
    void this.closed.then(() => this.#wake?.());
  }

  /** Resolves once connected. */
  opened(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.once("connect", resolve);
      this.socket.once("error", reject);
    });
  }

  /** Writes and resolves once the bytes are handed to the kernel. */
  write(data: string | Uint8Array): Promise<void> {
    return new Promise((resolve, reject) => {
      this.socket.write(data, (error) => error ? reject(error) : resolve());
    });
  }

  /** The status of the first response, once its head has arrived (0: closed without one). */
  async status(): Promise<number> {
    for (;;) {
      const match = /^HTTP\/1\.1 (\d{3})/.exec(this.#received);
      if (match && this.#received.includes("\r\n\r\n")) return Number(match[1]);
      if (this.socket.destroyed || this.socket.readableEnded) return 0;
      await new Promise<void>((resolve) => this.#wake = resolve);
    }
  }

  /** Everything received so far. */
  get received(): string {
    return this.#received;
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** What `promise` settles with, or `fallback` when it has not after `ms` (a bound, not a wait). */
async function orAfter<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<T>((resolve) => timer = setTimeout(() => resolve(fallback), ms));
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The head of a POST to `/acp` with a body of `length` bytes. */
function postHead(port: number, length: number): string {
  return `POST /acp HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`;
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: a body dripped one byte per segment pins no memory`, async () => {
    await using dirs = new TempDirs("acp-harness-http-limits-");
    await using server = await serve(runtime, dirs);
    // A few requests first, so that what the server loads once is loaded.
    for (let warm = 0; warm < 3; warm++) {
      const response = await fetch(`${server.url}/acp`, {
        method: "POST",
        headers: { ...AUTH, "content-type": "application/json" },
        body: "{}",
      });
      await response.body?.cancel();
    }
    const before = rssMiB(server.pid);
    const connections = 4;
    const bytes = 3000;
    // `{}` then spaces: JSON, but no message the server could act on (it answers 400).
    const body = new TextEncoder().encode("{}" + " ".repeat(bytes - 2));
    const clients = Array.from({ length: connections }, () => new RawConnection(server.port));
    try {
      await Promise.all(clients.map((client) => client.opened()));
      await Promise.all(
        clients.map((client) => client.write(postHead(server.port, body.byteLength))),
      );
      // One byte at a time, to each connection in turn: each byte comes well after the one before
      // on its connection, and the server reads it on its own.
      for (let at = 0; at < body.byteLength - 1; at++) {
        for (const client of clients) await client.write(body.subarray(at, at + 1));
      }
      // Every body is one byte short: what the server holds for them is held now.
      const peak = rssMiB(server.pid);
      await Promise.all(clients.map((client) => client.write(body.subarray(body.byteLength - 1))));
      const statuses = await Promise.all(clients.map((client) => client.status()));
      assert.deepEqual(statuses, Array(connections).fill(400));
      // 12,000 bytes in flight, nowhere near 46 KiB a byte (550 MiB). On Deno each one-byte read
      // of Deno.serve (behind the socket relay) still allocates a read buffer that is garbage at
      // once but counts in RSS until the collector runs: bounded here, and given back below.
      assert(
        peak - before < 128,
        `RSS grew ${(peak - before).toFixed(1)} MiB for ${connections * bytes} bytes`,
      );
    } finally {
      for (const client of clients) client.destroy();
    }
    await Promise.all(clients.map((client) => client.closed));
    // Memory comes back (or never went): polled, as the runtime's collector runs when it will.
    await pollUntil(() => rssMiB(server.pid) - before < 48, {
      what: "the server's memory back near where it started",
      timeoutMs: 20_000,
      intervalMs: 100,
    });
  });

  Deno.test(`${runtime.name}: a body that stalls gets 408 after --body-timeout`, async () => {
    await using dirs = new TempDirs("acp-harness-http-limits-");
    await using server = await serve(runtime, dirs, ["--body-timeout", "1"]);
    const client = new RawConnection(server.port);
    try {
      await client.opened();
      await client.write(postHead(server.port, 100) + '{"jsonrpc":');
      // Far past the 1 s limit: only so that a server that never answers fails the test.
      const status = await orAfter(client.status(), 20_000, -1);
      assert.equal(status, 408, client.received);
      assert.match(client.received, /--body-timeout/);
    } finally {
      client.destroy();
    }
    // The server goes on serving.
    const health = await fetch(`${server.url}/health`);
    assert.equal(await health.text(), "ok");
  });
}

/** A request of `method` whose id is written as `id` (any JSON number text). */
function withId(id: string, method: string, params: unknown): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"${method}","params":${JSON.stringify(params)}}`;
}

const INITIALIZE = { protocolVersion: 1, clientCapabilities: {} };
/** Ids no number holds exactly: beyond 2^53, negative, a fraction, an exponent. */
const INEXACT = [
  "9007199254740993",
  "123456789012345678901234567890",
  "-98765432109876543210",
  "1.50",
];
/** Ids no number holds at all. */
const NON_FINITE = ["1e400", "9".repeat(400)];

/** POSTs a JSON text; the status and the body's text. */
async function post(
  url: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; text: string; headers: Headers }> {
  const response = await fetch(url, {
    method: "POST",
    headers: { ...AUTH, "content-type": "application/json", ...headers },
    body,
  });
  return { status: response.status, text: await response.text(), headers: response.headers };
}

/** A WebSocket on `/acp` that hands over every text frame as it came. */
async function rawWebSocket(url: string): Promise<{
  socket: NodeWebSocket;
  next(): Promise<string>;
}> {
  const socket = new NodeWebSocket(`${url.replace("http", "ws")}/acp`, { headers: AUTH });
  const frames: string[] = [];
  let wake: (() => void) | undefined;
  socket.on("message", (data: Buffer) => {
    frames.push(data.toString("utf8"));
    wake?.();
  });
  await new Promise<void>((resolve, reject) => {
    socket.once("open", () => resolve());
    socket.once("error", reject);
  });
  return {
    socket,
    async next(): Promise<string> {
      while (frames.length === 0) await new Promise<void>((resolve) => wake = resolve);
      return frames.shift()!;
    },
  };
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: request ids are echoed exactly over HTTP and WebSocket`, async () => {
    await using dirs = new TempDirs("acp-harness-http-limits-");
    await using server = await serve(runtime, dirs);
    for (const id of INEXACT) {
      // `/acp`: `initialize` is answered inline; the rest come on the connection's SSE stream.
      const opened = await post(`${server.url}/acp`, withId(id, "initialize", INITIALIZE));
      assert.equal(opened.status, 200, opened.text);
      assert(opened.text.includes(`"id":${id},`), `/acp initialize: ${opened.text}`);
      const connection = opened.headers.get("acp-connection-id")!;
      const stream = await fetch(`${server.url}/acp`, {
        headers: { ...AUTH, "acp-connection-id": connection, accept: "text/event-stream" },
      });
      const listed = await post(`${server.url}/acp`, withId(id, "session/list", {}), {
        "acp-connection-id": connection,
      });
      assert.equal(listed.status, 202, listed.text);
      const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
      let events = "";
      while (!events.includes(`"id":${id},`)) {
        const { done, value } = await reader.read();
        assert(!done, `/acp stream ended without the answer: ${events}`);
        events += value;
      }
      await reader.cancel();
      await fetch(`${server.url}/acp`, {
        method: "DELETE",
        headers: { ...AUTH, "acp-connection-id": connection },
      }).then((response) => response.body?.cancel());

      // `/v1/acp/:id`: answered in the POST's body.
      const keyed = `${server.url}/v1/acp/exact-${runtime.name}`;
      const init = await post(keyed, withId(id, "initialize", INITIALIZE));
      assert(init.text.startsWith(`{"jsonrpc":"2.0","id":${id},`), `/v1/acp: ${init.text}`);
      const list = await post(keyed, withId(id, "session/list", {}));
      assert(list.text.startsWith(`{"jsonrpc":"2.0","id":${id},`), `/v1/acp: ${list.text}`);
      await fetch(keyed, { method: "DELETE", headers: AUTH }).then((r) => r.body?.cancel());

      // WebSocket frames.
      const ws = await rawWebSocket(server.url);
      ws.socket.send(withId(id, "initialize", INITIALIZE));
      const first = await ws.next();
      assert(first.includes(`"id":${id},`), `WebSocket: ${first}`);
      ws.socket.send(withId(id, "session/list", {}));
      const second = await ws.next();
      assert(second.includes(`"id":${id},`), `WebSocket: ${second}`);
      ws.socket.close();
    }
  });

  Deno.test(`${runtime.name}: a request id no number holds is answered -32600`, async () => {
    await using dirs = new TempDirs("acp-harness-http-limits-");
    await using server = await serve(runtime, dirs);
    const keyed = `${server.url}/v1/acp/finite-${runtime.name}`;
    const ready = await post(keyed, withId("0", "initialize", INITIALIZE));
    assert.equal(ready.status, 200);
    const opened = await post(`${server.url}/acp`, withId("0", "initialize", INITIALIZE));
    const connection = opened.headers.get("acp-connection-id")!;
    const ws = await rawWebSocket(server.url);
    ws.socket.send(withId("0", "initialize", INITIALIZE));
    await ws.next();
    for (const id of NON_FINITE) {
      for (const method of ["initialize", "session/list"]) {
        for (
          const [where, answer] of [
            ["/acp (opening)", post(`${server.url}/acp`, withId(id, method, INITIALIZE))],
            [
              "/acp",
              post(`${server.url}/acp`, withId(id, method, {}), {
                "acp-connection-id": connection,
              }),
            ],
            ["/v1/acp/:id", post(keyed, withId(id, method, {}))],
          ] as const
        ) {
          const { status, text } = await answer;
          assert.equal(status, 400, `${where} ${method}: ${text}`);
          const body = JSON.parse(text);
          assert.equal(body.error.code, -32600, `${where} ${method}: ${text}`);
          assert.match(body.error.message, /id/);
        }
        ws.socket.send(withId(id, method, {}));
        const frame = JSON.parse(await ws.next());
        assert.equal(frame.error?.code, -32600, `WebSocket ${method}: ${JSON.stringify(frame)}`);
      }
    }
    // Each connection goes on serving.
    const list = await post(keyed, withId("7", "session/list", {}));
    assert(list.text.startsWith('{"jsonrpc":"2.0","id":7,"result"'), list.text);
    ws.socket.send(withId("8", "session/list", {}));
    assert.match(await ws.next(), /"id":8,"result"/);
    ws.socket.close();
  });
}

/** How many lines of the server's log match. */
function logLines(agent: StdioAgent, pattern: RegExp): number {
  return agent.stderr().split("\n").filter((line) => pattern.test(line)).length;
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: one address gets at most --max-connections-per-address`, async () => {
    await using dirs = new TempDirs("acp-harness-http-limits-");
    await using server = await serve(runtime, dirs, ["--max-connections-per-address", "3"]);
    const initialize = withId("0", "initialize", INITIALIZE);
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) {
      const opened = await post(`${server.url}/acp`, initialize);
      assert.equal(opened.status, 200, opened.text);
      ids.push(opened.headers.get("acp-connection-id")!);
    }
    // The fourth, on every route: refused with a clear body, and nothing opened.
    const refused = await post(`${server.url}/acp`, initialize);
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.headers.get("retry-after"), "1");
    assert.match(JSON.parse(refused.text).detail, /--max-connections-per-address/);
    const keyed = await post(`${server.url}/v1/acp/one-too-many`, initialize);
    assert.equal(keyed.status, 429, keyed.text);
    const upgrade = new NodeWebSocket(`${server.url.replace("http", "ws")}/acp`, { headers: AUTH });
    const upgraded = await new Promise<number>((resolve) => {
      upgrade.once("unexpected-response", (_, response) => resolve(response.statusCode ?? 0));
      upgrade.once("open", () => resolve(101));
      upgrade.once("error", () => {});
    });
    upgrade.terminate();
    assert.equal(upgraded, 429);
    // The connections already open are served, and one that closes makes room.
    const listed = await post(`${server.url}/acp`, withId("1", "session/list", {}), {
      "acp-connection-id": ids[0]!,
    });
    assert.equal(listed.status, 202, listed.text);
    const closed = await fetch(`${server.url}/acp`, {
      method: "DELETE",
      headers: { ...AUTH, "acp-connection-id": ids[0]! },
    });
    await closed.body?.cancel();
    await pollUntil(() => logLines(server.agent, /connection closed/) >= 1, {
      what: "the closed connection in the server's log (its only announcement)",
    });
    const again = await post(`${server.url}/acp`, initialize);
    assert.equal(again.status, 200, again.text);
  });

  Deno.test(`${runtime.name}: 1,000 idle connections are swept (and, but on Node.js, their memory given back)`, async () => {
    await using dirs = new TempDirs("acp-harness-http-limits-");
    await using server = await serve(runtime, dirs, [
      "--idle-timeout",
      "1",
      "--max-connections-per-address",
      "1000",
    ]);
    const client = Deno.createHttpClient({ poolMaxIdlePerHost: 0 });
    try {
      const open = async (): Promise<void> => {
        const response = await fetch(`${server.url}/acp`, {
          client,
          method: "POST",
          headers: { ...AUTH, "content-type": "application/json" },
          body: withId("0", "initialize", INITIALIZE),
        });
        assert.equal(response.status, 200);
        await response.body?.cancel();
      };
      for (let warm = 0; warm < 20; warm++) await open();
      await pollUntil(() => logLines(server.agent, /connection closed/) >= 20, {
        what: "the warm-up connections swept",
        timeoutMs: 30_000,
      });
      const before = rssMiB(server.pid);
      for (let batch = 0; batch < 20; batch++) await Promise.all(Array.from({ length: 50 }, open));
      // The registry is empty once the log shows every connection closed.
      await pollUntil(() => logLines(server.agent, /connection closed/) >= 1020, {
        what: "every idle connection swept (the server's log)",
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      assert.equal(logLines(server.agent, /connection opened/), 1020);
      // What a swept connection held is garbage, given back when the runtime collects: Deno's
      // and Bun's collectors do within seconds of going idle. Node.js's may not collect at all
      // while idle (its heap, collected by hand, is back within 2 MiB of the start, but its RSS
      // stays where the crowd left it), so there the swept registry above is what is checked.
      if (runtime.name === "node") return;
      await pollUntil(() => rssMiB(server.pid) - before < 80, {
        what: `the server's memory back near ${before.toFixed(0)} MiB`,
        timeoutMs: 30_000,
        intervalMs: 200,
      }).catch(() => {
        throw new Error(
          `RSS ${rssMiB(server.pid).toFixed(0)} MiB after the sweep, ${before.toFixed(0)} before`,
        );
      });
    } finally {
      client.close();
    }
  });
}
