import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { isAbsolute, join } from "node:path";
import process from "node:process";
import { createInterface } from "node:readline";
import { isAlive, waitGone } from "../host/_processes.ts";
import {
  everythingStdio,
  fakeStdio,
  filesystemStdio,
  killProcessesWithMarker,
  NODE,
  processesWithMarker,
  startEverythingRemote,
  type StdioCommand,
} from "./mcp_servers.ts";
import { tempDir } from "./temp_dir.ts";

type Message = Record<string, unknown> & { id?: unknown; result?: Record<string, unknown> };

/** How a process ended. */
interface Exit {
  readonly code: number | null;
  readonly signal: string | null;
}

/** A stdio MCP server driven by raw JSON lines; disposing of it kills it (its group if detached). */
class RawServer implements AsyncDisposable {
  readonly child: ChildProcess;
  /** Resolves once the process has exited and its pipes have closed. */
  readonly closed: Promise<Exit>;
  readonly stderr: string[] = [];
  readonly #messages: Message[] = [];
  readonly #waiters: (() => void)[] = [];
  readonly #detached: boolean;

  constructor(
    server: StdioCommand,
    options: { cwd?: string; env?: Record<string, string>; detached?: boolean } = {},
  ) {
    this.#detached = options.detached ?? false;
    this.child = spawn(server.command, server.args, {
      stdio: ["pipe", "pipe", "pipe"],
      detached: this.#detached,
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      env: { ...process.env, ...options.env },
    });
    this.closed = new Promise((resolve) => {
      this.child.once("close", (code, signal) => resolve({ code, signal }));
    });
    this.child.stdin?.on("error", () => {}); // The server may die before reading what we sent.
    createInterface({ input: this.child.stdout!, crlfDelay: Infinity }).on("line", (line) => {
      this.#messages.push(JSON.parse(line) as Message);
      this.#wake();
    });
    createInterface({ input: this.child.stderr!, crlfDelay: Infinity }).on("line", (line) => {
      this.stderr.push(line);
      this.#wake();
    });
    void this.closed.then(() => this.#wake());
  }

  #wake(): void {
    for (const waiter of this.#waiters.splice(0)) waiter();
  }

  /** Resolves when `ready` holds, checked on each line and at exit; rejects if it never can. */
  async #until(ready: () => boolean, what: string): Promise<void> {
    while (!ready()) {
      if (this.child.exitCode !== null || this.child.signalCode !== null) {
        await this.closed; // Every line is in by then.
        if (ready()) return;
        throw new Error(`The server exited before ${what}; stderr:\n${this.stderr.join("\n")}`);
      }
      await new Promise<void>((resolve) => this.#waiters.push(resolve));
    }
  }

  /** Writes one JSON-RPC message. */
  send(message: Record<string, unknown>): void {
    this.child.stdin!.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  }

  /** The next message the server writes. */
  async next(): Promise<Message> {
    await this.#until(() => this.#messages.length > 0, "writing another message");
    return this.#messages.shift()!;
  }

  /** Sends a request and returns the next message, which must answer it. */
  async request(
    id: number,
    method: string,
    params: Record<string, unknown> = {},
  ): Promise<Message> {
    this.send({ id, method, params });
    const answer = await this.next();
    assert.equal(answer.id, id, `the answer to ${method}`);
    return answer;
  }

  /** Sends a request and returns its answer, dropping whatever else the server writes first. */
  async answer(id: number, method: string, params: Record<string, unknown> = {}): Promise<Message> {
    this.send({ id, method, params });
    while (true) {
      const message = await this.next();
      if (message.id === id && message.method === undefined) return message;
    }
  }

  /** Waits for a stderr line matching `pattern`. */
  async stderrLine(pattern: RegExp): Promise<string> {
    await this.#until(() => this.stderr.some((l) => pattern.test(l)), `logging ${pattern}`);
    return this.stderr.find((l) => pattern.test(l))!;
  }

  /** Ends stdin and waits for the exit. */
  async end(): Promise<Exit> {
    this.child.stdin!.end();
    return await this.closed;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      try {
        const pid = this.child.pid!;
        process.kill(this.#detached ? -pid : pid, "SIGKILL");
      } catch {
        // Gone meanwhile.
      }
    }
    this.child.stdin?.destroy();
    await this.closed;
  }
}

const INITIALIZE = {
  protocolVersion: "2025-06-18",
  capabilities: {},
  clientInfo: { name: "mcp-servers-test", version: "0" },
};

/** The text of a tools/call result's first content block. */
function firstText(answer: Message): string {
  const content = answer.result?.content as { type: string; text: string }[];
  assert.equal(content[0]?.type, "text");
  return content[0].text;
}

Deno.test("NODE is an absolute path to node", () => {
  assert.ok(isAbsolute(NODE), NODE);
  assert.match(NODE, /\/node$/);
});

Deno.test("fakeStdio() speaks MCP: initialize, tools, prompts, ping, errors, EOF", async () => {
  await using server = new RawServer(fakeStdio());
  const init = await server.request(1, "initialize", {
    ...INITIALIZE,
    protocolVersion: "2025-11-25",
  });
  assert.deepEqual(init.result, {
    protocolVersion: "2025-11-25",
    capabilities: { tools: { listChanged: true }, prompts: { listChanged: false } },
    serverInfo: { name: "fake", version: "1.0.0" },
  });
  const old = await server.request(2, "initialize", {
    ...INITIALIZE,
    protocolVersion: "2024-11-05",
  });
  assert.equal(old.result?.protocolVersion, "2025-06-18");
  server.send({ method: "notifications/initialized" });

  const list = await server.request(3, "tools/list");
  const tools = list.result?.tools as {
    name: string;
    inputSchema: unknown;
    annotations: unknown;
  }[];
  assert.deepEqual(tools.map((t) => t.name), [
    "echo",
    "add",
    "write_note",
    "delete_everything",
    "fail",
    "image",
    "slow",
    "env",
    "meta",
    "cwd",
    "add_tool",
    "schema_zoo",
  ]);
  for (const tool of tools) {
    assert.equal((tool.inputSchema as { type: string }).type, "object", tool.name);
    assert.ok(tool.annotations !== undefined, tool.name);
  }
  const byName = new Map(tools.map((t) => [t.name, t as Record<string, unknown>]));
  assert.deepEqual(byName.get("delete_everything")?.annotations, { destructiveHint: true });
  assert.deepEqual(byName.get("write_note")?.annotations, {
    readOnlyHint: false,
    destructiveHint: false,
  });
  assert.ok(byName.get("add")?.outputSchema !== undefined);
  const zoo = JSON.stringify(byName.get("schema_zoo")?.inputSchema);
  for (const part of ['"$defs"', '"$ref"', '"anyOf"', '"additionalProperties":false', '"format"']) {
    assert.ok(zoo.includes(part), part);
  }

  const call = (id: number, name: string, args: Record<string, unknown> = {}): Promise<Message> =>
    server.request(id, "tools/call", { name, arguments: args });
  assert.equal(firstText(await call(4, "echo", { text: "hi" })), "echo: hi");
  const meta = await server.request(40, "tools/call", {
    name: "meta",
    arguments: {},
    _meta: { traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" },
  });
  assert.equal(
    firstText(meta),
    '{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}',
  );
  assert.equal(firstText(await call(41, "meta")), "null");
  const add = await call(5, "add", { a: 2, b: 3 });
  assert.equal(firstText(add), "5");
  assert.deepEqual(add.result?.structuredContent, { sum: 5 });
  assert.equal(firstText(await call(6, "write_note", { note: "n" })), "noted");
  assert.equal(firstText(await call(7, "delete_everything")), "deleted");
  assert.deepEqual((await call(8, "fail")).result, {
    isError: true,
    content: [{ type: "text", text: "it failed on purpose" }],
  });
  const image = (await call(9, "image")).result?.content as Record<string, unknown>[];
  assert.deepEqual(image.map((c) => c.type), ["image", "resource_link", "resource"]);
  const png = Uint8Array.from(atob(image[0]!.data as string), (c) => c.charCodeAt(0));
  assert.deepEqual([...png.subarray(1, 4)], [0x50, 0x4e, 0x47]); // "PNG"
  assert.deepEqual(image[2]!.resource, {
    uri: "file:///note.txt",
    mimeType: "text/plain",
    text: "embedded text",
  });
  assert.equal(firstText(await call(10, "schema_zoo", { where: { x: 1, y: 2 } })), "ok");
  const unknown = await call(11, "nope");
  assert.equal(unknown.result, undefined);
  assert.equal((unknown.error as { code: number }).code, -32602);

  const prompts = await server.request(20, "prompts/list");
  assert.deepEqual((prompts.result?.prompts as { name: string }[]).map((p) => p.name), [
    "greet",
    "review",
  ]);
  const greet = await server.request(21, "prompts/get", {
    name: "greet",
    arguments: { name: "Ada" },
  });
  assert.deepEqual(greet.result?.messages, [
    { role: "user", content: { type: "text", text: "Say hello to Ada" } },
  ]);
  const review = await server.request(22, "prompts/get", { name: "review" });
  assert.deepEqual((review.result?.messages as { role: string }[]).map((m) => m.role), [
    "user",
    "assistant",
  ]);
  assert.equal(
    ((await server.request(23, "prompts/get", { name: "greet" })).error as { code: number })
      .code,
    -32602,
  );

  assert.deepEqual((await server.request(30, "ping")).result, {});
  assert.equal(
    ((await server.request(31, "resources/list")).error as { code: number }).code,
    -32601,
  );

  assert.deepEqual(await server.end(), { code: 0, signal: null });
});

Deno.test("fakeStdio() tells the server of a cancelled slow call in stderr and FAKE_MCP_EVENTS", async () => {
  await using dir = await tempDir("acp-harness-mcp-fixture-");
  const events = join(dir.path, "events.log");
  await using server = new RawServer(fakeStdio(), { env: { FAKE_MCP_EVENTS: events } });
  await server.request(1, "initialize", INITIALIZE);
  server.send({ id: 2, method: "tools/call", params: { name: "slow", arguments: {} } });
  server.send({ method: "notifications/cancelled", params: { requestId: 2, reason: "test" } });
  // The server handles lines in order: once the ping is answered, the cancel was handled.
  assert.deepEqual((await server.request(3, "ping")).result, {});
  assert.equal(await readFile(events, "utf8"), "cancelled 2\n");
  assert.match(await server.stderrLine(/cancelled 2$/), /cancelled 2$/);
  assert.deepEqual(await server.end(), { code: 0, signal: null });
});

Deno.test("fakeStdio() add_tool announces tools/list_changed before answering", async () => {
  await using server = new RawServer(fakeStdio());
  await server.request(1, "initialize", INITIALIZE);
  server.send({
    id: 2,
    method: "tools/call",
    params: { name: "add_tool", arguments: { name: "extra" } },
  });
  assert.deepEqual(await server.next(), {
    jsonrpc: "2.0",
    method: "notifications/tools/list_changed",
  });
  const answer = await server.next();
  assert.equal(answer.id, 2);
  assert.equal(firstText(answer), "added");
  const tools = (await server.request(3, "tools/list")).result?.tools as { name: string }[];
  assert.equal(tools.at(-1)?.name, "extra");
  const extra = await server.request(4, "tools/call", { name: "extra", arguments: { text: "x" } });
  assert.equal(firstText(extra), "extra: x");
});

Deno.test("fakeStdio() env and cwd tools tell the server's environment and directory", async () => {
  await using dir = await tempDir("acp-harness-mcp-fixture-");
  await using server = new RawServer(fakeStdio(), { cwd: dir.path, env: { FAKE_VALUE: "v1" } });
  await server.request(1, "initialize", INITIALIZE);
  const call = (id: number, name: string, args: Record<string, unknown> = {}): Promise<Message> =>
    server.request(id, "tools/call", { name, arguments: args });
  assert.equal(firstText(await call(2, "env", { name: "FAKE_VALUE" })), "v1");
  assert.equal(firstText(await call(3, "env", { name: "FAKE_NOT_SET_ANYWHERE" })), "(unset)");
  assert.equal(firstText(await call(4, "cwd")), dir.path);
  await server.end();
});

Deno.test("fakeStdio('--exit-at-start') exits with 3 after writing to stderr", async () => {
  await using server = new RawServer(fakeStdio("--exit-at-start"));
  assert.deepEqual(await server.closed, { code: 3, signal: null });
  assert.ok(server.stderr.length > 0);
});

Deno.test("fakeStdio('--hang-at-start') answers ping but never initialize", async () => {
  await using server = new RawServer(fakeStdio("--hang-at-start"));
  server.send({ id: 1, method: "initialize", params: INITIALIZE });
  server.send({ id: 2, method: "ping" });
  // Lines are handled in order: the first answer is the ping's, so initialize got none.
  assert.deepEqual(await server.next(), { jsonrpc: "2.0", id: 2, result: {} });
  assert.deepEqual(await server.end(), { code: 0, signal: null });
});

Deno.test("fakeStdio('--die-after-calls=1') dies at the second tools/call, unanswered", async () => {
  await using server = new RawServer(fakeStdio("--die-after-calls=1"));
  await server.request(1, "initialize", INITIALIZE);
  const first = await server.request(2, "tools/call", { name: "echo", arguments: { text: "a" } });
  assert.equal(firstText(first), "echo: a");
  server.send({ id: 3, method: "tools/call", params: { name: "echo", arguments: { text: "b" } } });
  assert.deepEqual(await server.closed, { code: 1, signal: null });
  await assert.rejects(server.next(), /exited before/);
});

Deno.test("fakeStdio('--spawn-grandchild') leaves a marked grandchild that a group kill ends", async () => {
  const marker = `fake-mcp-test-${crypto.randomUUID()}`;
  try {
    await using server = new RawServer(fakeStdio("--spawn-grandchild", `--marker=${marker}`), {
      detached: true,
    });
    await server.request(1, "initialize", INITIALIZE);
    const answer = await server.request(2, "tools/call", { name: "grandchild_pid", arguments: {} });
    const grandchild = Number(firstText(answer));
    const marked = await processesWithMarker(marker);
    assert.ok(marked.includes(server.child.pid!), "the server carries the marker");
    assert.ok(marked.includes(grandchild), "the grandchild carries the marker");
    const cmdline = await readFile(`/proc/${grandchild}/cmdline`, "latin1");
    assert.ok(cmdline.includes("fake-mcp-grandchild"), cmdline);
    // The group kill (what disposing of a detached RawServer does) must take the grandchild too.
    await server[Symbol.asyncDispose]();
    assert.deepEqual(await waitGone(marked), []);
    assert.deepEqual(await processesWithMarker(marker), []);
  } finally {
    await killProcessesWithMarker(marker);
  }
});

Deno.test("everythingStdio() and filesystemStdio() start the reference servers", async () => {
  await using dir = await tempDir("acp-harness-mcp-fixture-");
  for (const command of [everythingStdio(), filesystemStdio(dir.path)]) {
    assert.ok(isAbsolute(command.command) && isAbsolute(command.args[0]!));
    await using server = new RawServer(command);
    const init = await server.answer(1, "initialize", INITIALIZE);
    assert.equal(init.result?.protocolVersion, "2025-06-18");
    server.send({ method: "notifications/initialized" });
    const tools = (await server.answer(2, "tools/list")).result?.tools as { name: string }[];
    assert.ok(tools.length > 3, JSON.stringify(tools.map((t) => t.name)));
    if (command.args.includes(dir.path)) {
      assert.ok(tools.some((t) => t.name === "list_directory"));
    } else {
      assert.ok(tools.some((t) => t.name === "echo"));
    }
    await server.end();
  }
});

/** One server-sent event. */
interface ServerEvent {
  readonly event: string;
  readonly data: string;
}

/** Reads server-sent events from a response body: `until` reads on to the first that matches. */
function eventReader(body: ReadableStream<Uint8Array>): {
  until(stop: (event: ServerEvent) => boolean): Promise<ServerEvent>;
  cancel(): Promise<void>;
} {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  return {
    async until(stop: (event: ServerEvent) => boolean): Promise<ServerEvent> {
      while (true) {
        let end: number;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          let event = "message";
          const data: string[] = [];
          for (const line of block.split("\n")) {
            if (line.startsWith("event:")) event = line.slice(6).trim();
            else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
          }
          const found = { event, data: data.join("\n") };
          if (stop(found)) return found;
        }
        const { value, done } = await reader.read();
        if (done) throw new Error(`The event stream ended; left unread: ${buffer}`);
        buffer += value.replaceAll("\r\n", "\n");
      }
    },
    cancel: (): Promise<void> => reader.cancel(),
  };
}

const INITIALIZE_REQUEST = JSON.stringify({
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: INITIALIZE,
});

Deno.test("startEverythingRemote('streamableHttp') answers initialize at /mcp, and close() ends it", async () => {
  const server = await startEverythingRemote("streamableHttp");
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const response = await fetch(server.url, {
      method: "POST",
      headers: {
        "Content-Type": "application/json",
        Accept: "application/json, text/event-stream",
      },
      body: INITIALIZE_REQUEST,
    });
    assert.equal(response.status, 200);
    assert.ok(response.headers.get("mcp-session-id"));
    let answer: Message;
    if (response.headers.get("content-type")?.startsWith("text/event-stream")) {
      const events = eventReader(response.body!);
      const event = await events.until((e) => e.data.includes('"id":1'));
      await events.cancel();
      answer = JSON.parse(event.data) as Message;
    } else {
      answer = await response.json() as Message;
    }
    assert.equal(answer.id, 1);
    assert.equal(
      (answer.result?.serverInfo as { name: string }).name,
      "mcp-servers/everything",
    );
  } finally {
    await server.close();
  }
  assert.equal(await isAlive(server.pid), false);
  await server.close(); // Twice is fine.
});

Deno.test("startEverythingRemote('sse') answers initialize over its event stream, and disposes", async () => {
  let pid = 0;
  {
    await using server = await startEverythingRemote("sse");
    pid = server.pid;
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+\/sse$/);
    const stream = await fetch(server.url, { headers: { Accept: "text/event-stream" } });
    assert.equal(stream.status, 200);
    const events = eventReader(stream.body!);
    try {
      const endpoint = await events.until((e) => e.event === "endpoint");
      const post = await fetch(new URL(endpoint.data, server.url), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: INITIALIZE_REQUEST,
      });
      assert.equal(post.status, 202);
      await post.body?.cancel();
      const event = await events.until((e) => e.data.includes('"id":1'));
      const answer = JSON.parse(event.data) as Message;
      assert.equal(
        (answer.result?.serverInfo as { name: string }).name,
        "mcp-servers/everything",
      );
    } finally {
      await events.cancel();
    }
  }
  assert.equal(await isAlive(pid), false);
});
