/**
 * The HTTP listeners of Deno, Node.js and Bun (`src/runtime/*_http.ts`), for real on 127.0.0.1:
 * each runtime runs `tests/_fixtures/http_listener_fixture.ts` (Node.js a bundle of it, built
 * with the options of `dist/cli.js`, as the CLI runs there) and the test talks to it over HTTP,
 * raw sockets and WebSockets.
 *
 * @module
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { connect } from "node:net";
import process from "node:process";
import { build, stop } from "../../scripts/esbuild.ts";
import { cliBuildOptions } from "../../scripts/build.ts";
import { BUN, DENO, ROOT } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const FIXTURE = `${ROOT}tests/_fixtures/http_listener_fixture.ts`;
/** The bound on anything that should happen at once (a hung process or socket fails the test). */
const BOUND_MS = 15_000;
/** The fixture's `maxMessageBytes`. */
const MAX_MESSAGE_BYTES = 1024;

/** How to start the fixture on one runtime. */
interface FixtureCommand {
  readonly runtime: "deno" | "bun" | "node";
  readonly command: string;
  readonly args: readonly string[];
}

/** A running fixture. */
interface Served extends AsyncDisposable {
  /** The listener's URL, as it printed it. */
  readonly url: string;
  readonly child: ChildProcess;
  /** Everything on stdout and stderr so far. */
  output(): string;
  /** Resolves once stdout or stderr has shown `pattern` (within {@link BOUND_MS}). */
  printed(pattern: RegExp): Promise<void>;
  /** Closes the fixture's stdin (it then closes the listener). */
  end(): void;
  /** The exit code; rejects when the process outlives {@link BOUND_MS} (it is killed then). */
  exit(): Promise<number | null>;
}

/**
 * Settles like `promise`, or rejects after {@link BOUND_MS} (then runs `onTimeout`); clears its
 * timer.
 */
async function within<T>(
  promise: Promise<T>,
  what: string | (() => string),
  onTimeout: () => void = () => {},
): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout();
      reject(
        new Error(`Timed out after ${BOUND_MS} ms: ${typeof what === "string" ? what : what()}`),
      );
    }, BOUND_MS);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts the fixture with a grace period; resolves once it prints its URL. */
async function serve(fixture: FixtureCommand, graceMs: number): Promise<Served> {
  const child = spawn(fixture.command, [...fixture.args, String(graceMs)], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  let output = "";
  const watchers = new Set<() => void>();
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const collect = (text: string): void => {
    output += text;
    for (const watch of [...watchers]) watch();
  };
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stdout.on("data", collect);
  child.stderr.on("data", collect);
  /** Resolves once the output shows `pattern`; unbounded (callers bound it). */
  const seen = (pattern: RegExp): Promise<void> =>
    new Promise<void>((resolve) => {
      const watch = (): void => {
        if (!pattern.test(output)) return;
        watchers.delete(watch);
        resolve();
      };
      watchers.add(watch);
      watch();
    });
  const listening = Promise.race([
    seen(/^LISTENING \S+$/m).then(() => /^LISTENING (\S+)$/m.exec(output)?.[1] as string),
    exited.then((code): never => {
      throw new Error(`The fixture exited (${code}):\n${output}`);
    }),
  ]);
  child.stdin.on("error", () => {});
  const kill = (): void => void child.kill("SIGKILL");
  const exit = (): Promise<number | null> =>
    within(exited, () => `the fixture to exit:\n${output}`, kill);
  let url: string;
  try {
    url = await within(listening, "the fixture to listen", kill);
  } catch (error) {
    kill();
    await exited;
    throw error;
  }
  return {
    url,
    child,
    output: () => output,
    printed: (pattern) => within(seen(pattern), () => `${pattern} in:\n${output}`),
    end: () => void child.stdin.end(),
    exit,
    async [Symbol.asyncDispose](): Promise<void> {
      if (child.exitCode === null && child.signalCode === null) kill();
      await exited;
    },
  };
}

/**
 * Talks raw HTTP/1.1 (and WebSocket frames) to the listener: sends each step's bytes, then
 * collects the answer until the step's check holds (or the server closes the connection).
 *
 * @returns Everything the server sent
 */
async function rawExchange(
  url: string,
  steps: ReadonlyArray<readonly [send: string, done: (answer: string) => boolean]>,
): Promise<string> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.setEncoding("latin1");
  let answer = "";
  let check = (): void => {};
  let ended = false;
  const end = Promise.withResolvers<void>();
  socket.on("data", (text: string) => {
    answer += text;
    check();
  });
  socket.on("end", () => {
    ended = true;
    check();
  });
  socket.on("error", end.reject);
  try {
    for (const [send, done] of steps) {
      const answered = new Promise<void>((resolve, reject) => {
        check = () => ended || done(answer) ? resolve() : undefined;
        void end.promise.catch(reject);
      });
      socket.write(send, "latin1");
      check();
      await within(answered, "a raw HTTP answer");
    }
    return answer;
  } finally {
    socket.destroy();
  }
}

/** A raw HTTP/1.1 response: its head, and its body once complete (de-chunked). */
function parseResponse(raw: string): { head: string; body: string | undefined } {
  const end = raw.indexOf("\r\n\r\n");
  if (end === -1) return { head: raw, body: undefined };
  const head = raw.slice(0, end + 2);
  let rest = raw.slice(end + 4);
  const length = /\r\ncontent-length: *(\d+)\r\n/i.exec(head)?.[1];
  if (length !== undefined) {
    return {
      head,
      body: rest.length >= Number(length) ? rest.slice(0, Number(length)) : undefined,
    };
  }
  if (!/\r\ntransfer-encoding: *chunked\r\n/i.test(head)) return { head, body: undefined };
  let body = "";
  for (;;) {
    const line = rest.indexOf("\r\n");
    if (line === -1) return { head, body: undefined };
    const size = parseInt(rest.slice(0, line), 16);
    if (size === 0) return { head, body };
    if (rest.length < line + 2 + size + 2) return { head, body: undefined };
    body += rest.slice(line + 2, line + 2 + size);
    rest = rest.slice(line + 2 + size + 2);
  }
}

function upgradeRequest(extra = ""): string {
  return [
    "GET /acp HTTP/1.1",
    "Host: 127.0.0.1",
    "Upgrade: websocket",
    "Connection: Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Version: 13",
    extra,
    "",
  ].join("\r\n");
}

/** A WebSocket client (Deno's WHATWG one) that queues what it receives. */
interface Client {
  readonly socket: WebSocket;
  /** The next message. */
  next(): Promise<unknown>;
  /** The close event's code. */
  readonly closed: Promise<number>;
}

async function openClient(url: string): Promise<Client> {
  const socket = new WebSocket(`${url.replace(/^http/, "ws")}/acp`);
  const queue: unknown[] = [];
  const waiting: Array<(data: unknown) => void> = [];
  socket.addEventListener("message", (event) => {
    const take = waiting.shift();
    if (take) take(event.data);
    else queue.push(event.data);
  });
  const closed = new Promise<number>((resolve) => {
    socket.addEventListener("close", (event) => resolve(event.code), { once: true });
  });
  const opened = new Promise<void>((resolve, reject) => {
    socket.addEventListener("open", () => resolve(), { once: true });
    socket.addEventListener("error", () => reject(new Error("The WebSocket did not open")), {
      once: true,
    });
  });
  await within(opened, "the WebSocket to open", () => socket.close());
  return {
    socket,
    next: () =>
      within(
        queue.length > 0
          ? Promise.resolve(queue.shift())
          : new Promise((resolve) => waiting.push(resolve)),
        "a WebSocket message",
      ),
    closed,
  };
}

/** Closes a client and waits for the close to finish. */
async function closeClient(client: Client): Promise<void> {
  if (client.socket.readyState < WebSocket.CLOSING) client.socket.close();
  await within(client.closed, "the WebSocket to close");
}

/** Checks everything but closing on one running fixture. */
async function checkServing(t: Deno.TestContext, fixture: FixtureCommand): Promise<void> {
  await using served = await serve(fixture, 5000);

  await t.step("url has the port actually bound", () => {
    const url = new URL(served.url);
    assert.equal(served.url, `http://127.0.0.1:${url.port}`);
    assert.ok(Number(url.port) > 0);
  });

  await t.step("fetch() gets the request and the peer's address", async () => {
    const get = await fetch(`${served.url}/echo?x=1`);
    assert.equal(get.status, 200);
    assert.deepEqual(await get.json(), {
      method: "GET",
      path: "/echo",
      remoteAddress: "127.0.0.1",
    });
    const post = await fetch(`${served.url}/post`, { method: "POST", body: "{}" });
    assert.deepEqual(await post.json(), {
      method: "POST",
      path: "/post",
      remoteAddress: "127.0.0.1",
    });
  });

  await t.step("an upgrade's 101 response carries Acp-Connection-Id", async () => {
    const head = (answer: string): string => answer.slice(0, answer.indexOf("\r\n\r\n") + 4);
    const answer = await rawExchange(served.url, [
      [upgradeRequest(), (answer) => answer.includes("\r\n\r\n")],
      // A close frame (1000, mask 0) and the server's close frame: a socket dropped without one
      // keeps a Deno process alive for another 15 s (an idle-ping timer of Deno's).
      [
        "\x88\x82\x00\x00\x00\x00\x03\xe8",
        (answer) => answer.slice(head(answer).length).includes("\x88"),
      ],
    ]);
    assert.match(head(answer), /^HTTP\/1\.1 101 /);
    assert.match(head(answer), /\r\nacp-connection-id: conn-\d+\r\n/i);
  });

  await t.step("a refused upgrade gets the handler's response", async () => {
    const answer = await rawExchange(served.url, [
      [upgradeRequest("x-refuse: 1\r\n"), (raw) => parseResponse(raw).body !== undefined],
    ]);
    const { head, body } = parseResponse(answer);
    assert.match(head, /^HTTP\/1\.1 403 /);
    assert.match(head, /\r\nx-reason: test\r\n/i);
    assert.equal(body, "refused");
  });

  await t.step("text messages come back; binary ones are ignored", async () => {
    const client = await openClient(served.url);
    try {
      client.socket.send("hello");
      assert.equal(await client.next(), "hello");
      client.socket.send(new Uint8Array([1, 2, 3]));
      client.socket.send("after binary");
      assert.equal(await client.next(), "after binary");
      const largest = "x".repeat(MAX_MESSAGE_BYTES);
      client.socket.send(largest);
      assert.equal(await client.next(), largest);
    } finally {
      await closeClient(client);
    }
  });

  await t.step("a message over maxMessageBytes closes the socket with 1009", async () => {
    for (
      const message of ["x".repeat(MAX_MESSAGE_BYTES + 1), "é".repeat(MAX_MESSAGE_BYTES / 2 + 1)]
    ) {
      const client = await openClient(served.url);
      try {
        client.socket.send(message);
        assert.equal(await within(client.closed, "the close for a big message"), 1009);
      } finally {
        await closeClient(client);
      }
    }
    const client = await openClient(served.url);
    try {
      client.socket.send(new Uint8Array(MAX_MESSAGE_BYTES + 1));
      assert.equal(await within(client.closed, "the close for a big binary message"), 1009);
    } finally {
      await closeClient(client);
    }
  });

  served.end();
  assert.equal(await served.exit(), 0, served.output());
}

/** Checks `close(graceMs)` with nothing, a streaming response, and a WebSocket open. */
async function checkClosing(t: Deno.TestContext, fixture: FixtureCommand): Promise<void> {
  await t.step("close() settles at once when nothing is open (SIGTERM)", async () => {
    await using served = await serve(fixture, 600_000);
    // A finished exchange leaves an idle keep-alive connection in fetch's pool.
    await (await fetch(`${served.url}/echo`)).body?.cancel();
    // Not `child.kill()`: Deno's `node:child_process` then reports the exit as by that signal,
    // whatever the code.
    process.kill(served.child.pid as number, "SIGTERM");
    await served.printed(/^CLOSED$/m);
    served.end();
    assert.equal(await served.exit(), 0, served.output());
  });

  await t.step("close(grace) ends a response still streaming after the grace", async () => {
    await using served = await serve(fixture, 300);
    const response = await fetch(`${served.url}/stream`);
    const reader = response.body!.getReader();
    try {
      const first = await within(reader.read(), "the first chunk");
      assert.match(new TextDecoder().decode(first.value), /^chunk\n/);
      served.end();
      const ended = (async () => {
        try {
          while (!(await reader.read()).done);
          return "done";
        } catch {
          return "error";
        }
      })();
      assert.ok(["done", "error"].includes(await within(ended, "the stream to end")));
      assert.equal(await served.exit(), 0, served.output());
      assert.match(served.output(), /^CLOSED$/m);
    } finally {
      await reader.cancel().catch(() => {});
    }
  });

  await t.step("close(grace) ends a request the handler has not answered", async () => {
    await using served = await serve(fixture, 300);
    const response = fetch(`${served.url}/hang`).then(async (response) => {
      await response.body?.cancel();
      return response.status;
    }, () => "reset");
    await served.printed(/^HANG$/m);
    served.end();
    // Deno answers 503; Bun and Node.js drop the connection.
    const expected = fixture.runtime === "deno" ? 503 : "reset";
    assert.equal(await within(response, "the hung request to end"), expected);
    assert.equal(await served.exit(), 0, served.output());
  });

  await t.step("close(grace) closes a WebSocket still open after the grace", async () => {
    await using served = await serve(fixture, 300);
    const client = await openClient(served.url);
    try {
      client.socket.send("ping");
      assert.equal(await client.next(), "ping");
      served.end();
      await within(client.closed, "the server to close the WebSocket");
      assert.equal(await served.exit(), 0, served.output());
    } finally {
      await closeClient(client);
    }
  });
}

Deno.test("serveHttp() on Deno serves requests and WebSockets", async (t) => {
  await checkServing(t, { runtime: "deno", command: DENO, args: ["run", "-A", FIXTURE] });
});

Deno.test("serveHttp() on Deno closes with a grace period", async (t) => {
  await checkClosing(t, { runtime: "deno", command: DENO, args: ["run", "-A", FIXTURE] });
});

Deno.test("serveHttp() on Bun serves requests and WebSockets", async (t) => {
  await checkServing(t, { runtime: "bun", command: BUN, args: [FIXTURE] });
});

Deno.test("serveHttp() on Bun closes with a grace period", async (t) => {
  await checkClosing(t, { runtime: "bun", command: BUN, args: [FIXTURE] });
});

Deno.test("serveHttp() on Node.js (bundled) serves requests and WebSockets, and closes", async (t) => {
  await using dir = await tempDir("acp-harness-http-listener-");
  try {
    await build({ ...cliBuildOptions(ROOT, dir.path), entryPoints: { fixture: FIXTURE } });
  } finally {
    await stop();
  }
  const fixture: FixtureCommand = {
    runtime: "node",
    command: "node",
    args: [`${dir.path}/fixture.js`],
  };
  await checkServing(t, fixture);
  await checkClosing(t, fixture);
});
