/**
 * The URL-keyed HTTP profile (the shape `acp-http-client` speaks): raw requests against
 * `UrlKeyedProfile.handle()` with a real in-process agent server, and one session through the
 * real client over a socket.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";
import {
  type AgentServer,
  type AgentServerConnection,
  type Config,
  createLogger,
} from "../../../mod.ts";
import {
  ConnectionLimitError,
  type UrlKeyedOptions,
  UrlKeyedProfile,
} from "../../../src/transport/http/url_keyed_profile.ts";
import { ROOT } from "../../_helpers/runtimes.ts";
import { createTestAgentServer } from "../../_helpers/server.ts";
import { tempDir } from "../../_helpers/temp_dir.ts";

/** A profile in front of a real agent server, torn down on dispose. */
interface Served extends AsyncDisposable {
  readonly profile: UrlKeyedProfile;
  readonly server: AgentServer;
  /** Every connection the profile made, in order. */
  readonly connections: AgentServerConnection[];
  readonly logs: string[];
}

interface ServeOptions {
  readonly config?: Partial<Config>;
  readonly script?: unknown;
  readonly profile?: Partial<Omit<UrlKeyedOptions, "connect" | "logger">>;
}

function serve(options: ServeOptions = {}): Served {
  const { server, logs } = createTestAgentServer({
    ...options,
    retry: { attempts: 1, baseDelayMs: 5, maxDelayMs: 5 },
  });
  const logger = createLogger("debug", (line) => logs.push(line));
  const connections: AgentServerConnection[] = [];
  const profile = new UrlKeyedProfile({
    connect: (stream) => {
      const connection = server.connect(stream);
      connections.push(connection);
      return connection;
    },
    logger,
    maxBufferedBytes: 1 << 20,
    maxOutputStallMs: 10_000,
    ...options.profile,
  });
  return {
    profile,
    server,
    connections,
    logs,
    async [Symbol.asyncDispose](): Promise<void> {
      await profile.close();
      await server.close();
    },
  };
}

const URL_BASE = "http://localhost/v1/rpc";

function postRequest(body: unknown, headers: Record<string, string> = {}): Request {
  return new Request(URL_BASE, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

function getRequest(headers: Record<string, string> = {}): Request {
  return new Request(URL_BASE, { headers: { accept: "text/event-stream", ...headers } });
}

type Json = Record<string, unknown>;

let nextId = 0;

/**
 * Sends a request and returns its answer: the `200` body, or (with a reader attached, `202`) the
 * answer on the reader's stream.
 */
async function call(
  profile: UrlKeyedProfile,
  key: string,
  method: string,
  params: unknown,
  sse?: SseReader,
): Promise<Json> {
  const id = nextId++;
  const response = await profile.handle(
    postRequest({ jsonrpc: "2.0", id, method, params }),
    key,
  );
  if (sse) {
    assert.equal(response.status, 202, "a reader is attached: the answer is on the stream");
    assert.equal(await response.text(), "");
    return await sse.answer(id);
  }
  assert.equal(response.status, 200);
  assert.equal(response.headers.get("content-type"), "application/json");
  return await response.json() as Json;
}

const initParams = { protocolVersion: 1, clientCapabilities: {} };

/** One parsed SSE event. */
interface SseEvent {
  readonly event: string | undefined;
  readonly id: string | undefined;
  readonly data: string | undefined;
  readonly comments: readonly string[];
}

/**
 * Reads an SSE body the whole time, as a client does (an answer waits until its event has been
 * taken), and hands out its events in order.
 */
class SseReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #events: SseEvent[] = [];
  /** Every message received, in order. */
  readonly #messages: Json[] = [];
  #ended = false;
  readonly #wakes = new Set<() => void>();
  readonly #pump: Promise<void>;

  constructor(response: Response) {
    assert.equal(response.status, 200);
    assert.equal(response.headers.get("content-type"), "text/event-stream");
    assert.equal(response.headers.get("cache-control"), "no-cache");
    this.#reader = response.body!.getReader();
    this.#pump = this.#read();
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let buffer = "";
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done) break;
        buffer += decoder.decode(value, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const event = parseEvent(buffer.slice(0, end));
          buffer = buffer.slice(end + 2);
          this.#events.push(event);
          if (event.data !== undefined) this.#messages.push(JSON.parse(event.data) as Json);
        }
        this.#wake();
      }
      assert.equal(buffer, "", "the stream ended inside an event");
    } finally {
      this.#ended = true;
      this.#wake();
    }
  }

  #wake(): void {
    for (const wake of this.#wakes) wake();
    this.#wakes.clear();
  }

  async #changed(): Promise<void> {
    assert.ok(!this.#ended, "the stream ended");
    await new Promise<void>((resolve) => this.#wakes.add(resolve));
  }

  /** The next event or comment block; `undefined` once the stream has ended. */
  async next(): Promise<SseEvent | undefined> {
    while (this.#events.length === 0 && !this.#ended) await this.#changed();
    return this.#events.shift();
  }

  /** The answer to a request, whenever it came (the events stay for `next()`). */
  async answer(id: unknown): Promise<Json> {
    for (;;) {
      const found = this.#messages.find((message) => message.id === id && !("method" in message));
      if (found) return found;
      await this.#changed();
    }
  }

  /** The next message event: its numeric id and its JSON-RPC message. */
  async message(): Promise<{ id: number; message: Json }> {
    for (;;) {
      const event = await this.next();
      assert.ok(event, "the stream ended before the next message");
      if (event.data === undefined) continue;
      assert.equal(event.event, "message");
      assert.match(event.id ?? "", /^\d+$/);
      return { id: Number(event.id), message: JSON.parse(event.data) as Json };
    }
  }

  /** Reads message events until one matches. */
  async until(match: (message: Json) => boolean): Promise<{ id: number; message: Json }[]> {
    const seen: { id: number; message: Json }[] = [];
    for (;;) {
      const next = await this.message();
      seen.push(next);
      if (match(next.message)) return seen;
    }
  }

  /** Whether the stream ends with no more messages (comments aside). */
  async ended(): Promise<boolean> {
    for (;;) {
      const event = await this.next();
      if (event === undefined) return true;
      if (event.data !== undefined) return false;
    }
  }

  /** Stops reading. */
  async cancel(): Promise<void> {
    await this.#reader.cancel();
    await this.#pump;
  }
}

function parseEvent(block: string): SseEvent {
  const fields = new Map<string, string>();
  const comments: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) {
      comments.push(line.slice(1).trim());
      continue;
    }
    const colon = line.indexOf(":");
    assert.ok(!fields.has(line.slice(0, colon)), `one ${line.slice(0, colon)} line per event`);
    fields.set(line.slice(0, colon), line.slice(colon + 1).trimStart());
  }
  return { event: fields.get("event"), id: fields.get("id"), data: fields.get("data"), comments };
}

async function assertProblem(response: Response, status: number): Promise<Json> {
  assert.equal(response.status, status);
  assert.equal(response.headers.get("content-type"), "application/problem+json");
  const body = await response.json() as Json;
  assert.equal(body.status, status);
  assert.equal(typeof body.title, "string");
  assert.equal(typeof body.detail, "string");
  assert.equal(body.type, "about:blank");
  return body;
}

Deno.test("UrlKeyedProfile.handle() answers each status", async () => {
  await using served = serve();
  const { profile } = served;
  const put = await profile.handle(new Request(URL_BASE, { method: "PUT" }), "k");
  await assertProblem(put, 405);
  assert.equal(put.headers.get("allow"), "POST, GET, DELETE");
  await assertProblem(
    await profile.handle(postRequest("{}", { "content-type": "text/plain" }), "k"),
    415,
  );
  await assertProblem(await profile.handle(postRequest("{not json"), "k"), 400);
  const batch = [{ jsonrpc: "2.0", id: 1, method: "initialize", params: initParams }];
  await assertProblem(await profile.handle(postRequest(batch), "k"), 400);
  await assertProblem(await profile.handle(postRequest({ jsonrpc: "2.0", hello: 1 }), "k"), 400);
  await assertProblem(await profile.handle(postRequest(7), "k"), 400);
  await assertProblem(
    await profile.handle(getRequest({ accept: "application/json" }), "k"),
    406,
  );
  // None of those made a connection.
  assert.equal(profile.size, 0);

  // No reader is attached: the answer comes inline, as the 200 body.
  const init = await call(profile, "k", "initialize", initParams);
  assert.equal((init.result as Json).protocolVersion, 1);
  assert.ok(profile.has("k"));
  const notification = await profile.handle(
    postRequest({ jsonrpc: "2.0", method: "_test/notice", params: {} }),
    "k",
  );
  assert.equal(notification.status, 202);
  assert.equal(await notification.text(), "");
  const answer = await profile.handle(postRequest({ jsonrpc: "2.0", id: 41, result: {} }), "k");
  assert.equal(answer.status, 202);
  assert.equal(await answer.text(), "");
  // An unknown method is a JSON-RPC error, but still a 200.
  const unknown = await call(profile, "k", "_test/nothing", {});
  assert.equal((unknown.error as Json).code, -32601);

  const deleted = await profile.handle(new Request(URL_BASE, { method: "DELETE" }), "k");
  assert.equal(deleted.status, 204);
  assert.equal(profile.has("k"), false);
  assert.equal(served.connections.length, 1);
  await served.connections[0]!.closed;
  await assertProblem(
    await profile.handle(new Request(URL_BASE, { method: "DELETE" }), "k"),
    404,
  );
  assert.ok(
    served.logs.some((line) =>
      line.includes("HTTP connection opened") && line.includes('"key":"k"')
    ),
  );
});

Deno.test("UrlKeyedProfile: an early GET gets every event, framed with growing ids", async () => {
  await using dir = await tempDir("acp-harness-url-keyed-");
  await using served = serve();
  const { profile } = served;
  // The client's first GET can come before its initialize: it is held open and fed later.
  const sse = new SseReader(await profile.handle(getRequest(), "k"));
  try {
    assert.ok(profile.has("k"));
    const init = await call(profile, "k", "initialize", initParams, sse);
    const first = await sse.message();
    assert.deepEqual(first, { id: 1, message: init });
    const created = await call(
      profile,
      "k",
      "session/new",
      { cwd: dir.path, mcpServers: [] },
      sse,
    );
    const sessionId = (created.result as Json).sessionId as string;
    const prompt = call(profile, "k", "session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "hello" }],
    }, sse);
    const events = await sse.until((message) =>
      message.id !== undefined && "result" in message &&
      (message.result as Json).stopReason !== undefined
    );
    const answer = await prompt;
    assert.deepEqual(events.at(-1)!.message, answer, "the answer follows the turn's updates");
    assert.equal((answer.result as Json).stopReason, "end_turn");
    const ids = [first.id, ...events.map((event) => event.id)];
    assert.deepEqual(ids, ids.map((_, index) => index + 1), "ids grow by one per event");
    const text = events.map(({ message }) => message.params as Json | undefined)
      .map((params) => params?.update as Json | undefined)
      .filter((update) => update?.sessionUpdate === "agent_message_chunk")
      .map((update) => (update!.content as Json).text).join("");
    assert.equal(text, "Echo: hello");
  } finally {
    await sse.cancel();
  }
});

Deno.test("UrlKeyedProfile: a reader waiting for events gets keep-alive comments", async () => {
  await using served = serve({ profile: { keepAliveMs: 5 } });
  const sse = new SseReader(await served.profile.handle(getRequest(), "k"));
  try {
    const event = await sse.next();
    assert.deepEqual(event, {
      event: undefined,
      id: undefined,
      data: undefined,
      comments: ["keep-alive"],
    });
  } finally {
    await sse.cancel();
  }
});

Deno.test("UrlKeyedProfile: a new GET takes over and the old stream ends", async () => {
  await using served = serve();
  const { profile } = served;
  const old = new SseReader(await profile.handle(getRequest(), "k"));
  const taker = new SseReader(await profile.handle(getRequest(), "k"));
  try {
    assert.equal(await old.ended(), true);
    const init = await call(profile, "k", "initialize", initParams, taker);
    const first = await taker.message();
    assert.deepEqual(first, { id: 1, message: init });
    assert.equal(profile.size, 1);
  } finally {
    await taker.cancel();
  }
});

Deno.test("UrlKeyedProfile: Last-Event-ID replays delivered events; without it, only unread ones", async () => {
  await using dir = await tempDir("acp-harness-url-keyed-");
  await using served = serve();
  const { profile } = served;
  const first = new SseReader(await profile.handle(getRequest(), "k"));
  await call(profile, "k", "initialize", initParams, first);
  const created = await call(profile, "k", "session/new", {
    cwd: dir.path,
    mcpServers: [],
  }, first);
  // The session/new answer, then the session's slash commands.
  const seen = await first.until((message) =>
    (message.params as { update?: { sessionUpdate?: string } } | undefined)?.update
      ?.sessionUpdate === "available_commands_update"
  );
  assert.ok(seen.some(({ message }) => message.id === created.id && "result" in message));
  const last = seen.at(-1)!.id;
  assert.ok(last >= 2);

  // Back with Last-Event-ID 1: events 2.. again, and the first stream ends.
  const second = new SseReader(await profile.handle(getRequest({ "last-event-id": "1" }), "k"));
  assert.equal(await first.ended(), true);
  const replayed: { id: number; message: Json }[] = [];
  while (replayed.length < seen.length - 1) replayed.push(await second.message());
  assert.deepEqual(replayed, seen.slice(1));
  await second.cancel();

  // Nobody reads now: the answer comes inline, its event waits, and a GET without Last-Event-ID
  // gets just the events not delivered yet.
  const ping = await call(profile, "k", "_test/ping", {});
  const third = new SseReader(await profile.handle(getRequest(), "k"));
  try {
    const unread = await third.until((message) => message.id === ping.id);
    assert.equal(unread[0]!.id, last + 1);
    assert.deepEqual(unread.at(-1)!.message, ping);
  } finally {
    await third.cancel();
  }
});

Deno.test("UrlKeyedProfile: a reader that stops reading past the limits gets its connection closed", async () => {
  await using dir = await tempDir("acp-harness-url-keyed-");
  await using served = serve({
    config: { model: "scripted", mode: "ask" },
    // 64 KiB of answer, then a tool call whose permission request waits behind it: the turn is
    // still running when the output stalls.
    script: [{
      text: Array.from({ length: 64 }, () => "x".repeat(1024)),
      toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x" } }],
    }, { text: "never" }],
    profile: { maxBufferedBytes: 16 * 1024, maxOutputStallMs: 50 },
  });
  const { profile } = served;
  // Attached, but never read: answers come inline once it has not taken them for 50 ms.
  const stalled = await profile.handle(getRequest(), "k");
  await call(profile, "k", "initialize", initParams);
  const created = await call(profile, "k", "session/new", { cwd: dir.path, mcpServers: [] });
  const sessionId = (created.result as Json).sessionId as string;
  const answer = await call(profile, "k", "session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "write it" }],
  });
  assert.equal((answer.result as Json).stopReason, "cancelled", JSON.stringify(answer));
  await served.connections[0]!.closed;
  assert.equal(profile.has("k"), false);
  assert.equal(await stalled.text(), "", "the stalled stream ends, its backlog dropped");
  assert.equal(existsSync(join(dir.path, "a.txt")), false);
  assert.ok(
    served.logs.some((line) =>
      line.includes("warn: HTTP output stalled") && line.includes('"key":"k"')
    ),
  );

  // The session outlives its connection: a new connection on the key loads it.
  await call(profile, "k", "initialize", initParams);
  assert.equal(served.connections.length, 2);
  const loaded = await call(profile, "k", "session/load", {
    sessionId,
    cwd: dir.path,
    mcpServers: [],
  });
  assert.equal(loaded.error, undefined, JSON.stringify(loaded.error));
});

Deno.test("UrlKeyedProfile: a permission request goes out on the stream and the POSTed answer reaches the agent", async () => {
  await using dir = await tempDir("acp-harness-url-keyed-");
  await using served = serve({
    config: { model: "scripted", mode: "ask" },
    script: [
      {
        toolCalls: [{
          id: "w1",
          name: "write_file",
          arguments: { path: "allowed.txt", content: "yes" },
        }],
      },
      { text: "written" },
    ],
  });
  const { profile } = served;
  const sse = new SseReader(await profile.handle(getRequest(), "k"));
  try {
    await call(profile, "k", "initialize", initParams, sse);
    const created = await call(profile, "k", "session/new", {
      cwd: dir.path,
      mcpServers: [],
    }, sse);
    const sessionId = (created.result as Json).sessionId as string;
    const prompt = call(profile, "k", "session/prompt", {
      sessionId,
      prompt: [{ type: "text", text: "write it" }],
    }, sse);
    const events = await sse.until((message) => message.method === "session/request_permission");
    const ask = events.at(-1)!.message;
    const reply = await profile.handle(
      postRequest({
        jsonrpc: "2.0",
        id: ask.id,
        result: { outcome: { outcome: "selected", optionId: "allow_once" } },
      }),
      "k",
    );
    assert.equal(reply.status, 202);
    assert.equal(((await prompt).result as Json).stopReason, "end_turn");
    assert.equal(existsSync(join(dir.path, "allowed.txt")), true);
  } finally {
    await sse.cancel();
  }
});

Deno.test("UrlKeyedProfile.close() answers waiting requests and ends every stream", async () => {
  await using dir = await tempDir("acp-harness-url-keyed-");
  await using served = serve({
    config: { model: "scripted", mode: "ask" },
    script: [{
      toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "a.txt", content: "x" } }],
    }],
  });
  const { profile } = served;
  const sse = new SseReader(await profile.handle(getRequest(), "k"));
  await call(profile, "k", "initialize", initParams, sse);
  const created = await call(profile, "k", "session/new", {
    cwd: dir.path,
    mcpServers: [],
  }, sse);
  const sessionId = (created.result as Json).sessionId as string;
  const prompt = call(profile, "k", "session/prompt", {
    sessionId,
    prompt: [{ type: "text", text: "write it" }],
  }, sse);
  // The turn waits for a permission answer that never comes.
  await sse.until((message) => message.method === "session/request_permission");
  // close() settles once every stream has ended, so the stream is read meanwhile.
  const closing = profile.close();
  const answer = await prompt;
  assert.equal((answer.result as Json).stopReason, "cancelled");
  // The cancelled answer goes out on the stream before it ends.
  const rest = await sse.until((message) => message.id === answer.id);
  assert.deepEqual(rest.at(-1)!.message, answer);
  assert.equal(await sse.ended(), true);
  await closing;
  assert.equal(profile.size, 0);
  await assertProblem(await profile.handle(getRequest(), "k"), 503);
});

Deno.test("UrlKeyedProfile: a request left unanswered when its connection closes gets a JSON-RPC error", async () => {
  const logs: string[] = [];
  let refuse = false;
  let markReceived!: () => void;
  const received = new Promise<void>((resolve) => markReceived = resolve);
  // An agent that takes one message, answers nothing and closes when told to.
  const profile = new UrlKeyedProfile({
    connect: (stream) => {
      if (refuse) throw new ConnectionLimitError();
      const reader = stream.readable.getReader();
      void reader.read().then(markReceived);
      let markClosed!: () => void;
      const closed = new Promise<void>((resolve) => markClosed = resolve);
      return {
        closed,
        async close(): Promise<void> {
          await reader.cancel();
          markClosed();
        },
      };
    },
    logger: createLogger("debug", (line) => logs.push(line)),
    maxBufferedBytes: 1024,
    maxOutputStallMs: 1000,
  });
  const pending = profile.handle(
    postRequest({ jsonrpc: "2.0", id: "a", method: "initialize", params: initParams }),
    "k",
  );
  await received;
  const deleted = await profile.handle(new Request(URL_BASE, { method: "DELETE" }), "k");
  assert.equal(deleted.status, 204);
  const answer = await pending;
  assert.equal(answer.status, 200);
  assert.deepEqual(await answer.json(), {
    jsonrpc: "2.0",
    id: "a",
    error: { code: -32603, message: "Connection closed" },
  });

  refuse = true;
  const refused = await assertProblem(await profile.handle(getRequest(), "k"), 503);
  assert.match(String(refused.detail), /connection limit/);
  assert.ok(logs.some((line) => line.includes("warn: HTTP connection refused")));
  assert.equal(profile.size, 0);
  await profile.close();
});

Deno.test("UrlKeyedProfile serves a session to the real acp-http-client 0.4.2", async () => {
  await using dir = await tempDir("acp-harness-url-keyed-");
  await using served = serve();
  const { profile } = served;
  const listener = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    (request) => profile.handle(request, "k1"),
  );
  try {
    const baseUrl = `http://127.0.0.1:${listener.addr.port}`;
    // Node.js: under Deno the client's `@agentclientprotocol/sdk` import resolves to SDK 2.x.
    const child = spawn(
      "node",
      [`${ROOT}tests/_fixtures/acp_http_client_session.mjs`, baseUrl, dir.path],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (text: string) => stdout += text);
    child.stderr.setEncoding("utf8").on("data", (text: string) => stderr += text);
    const killer = setTimeout(() => child.kill("SIGKILL"), 30_000);
    const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
    clearTimeout(killer);
    assert.equal(code, 0, stderr);
    const run = JSON.parse(stdout) as Json;
    assert.equal(run.protocolVersion, 1);
    assert.equal(run.agent, "acp-harness");
    assert.equal(run.stopReason, "end_turn");
    assert.ok((run.updates as string[]).includes("agent_message_chunk"), stdout);
    assert.equal(run.text, "Echo: hello over http");
    // The client's DELETE closed the connection before it exited.
    assert.equal(profile.size, 0);
    assert.equal(served.connections.length, 1);
    await served.connections[0]!.closed;
  } finally {
    await listener.shutdown();
  }
});
