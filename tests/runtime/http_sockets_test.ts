/**
 * `serve --http` against hostile sockets, as a real child process on Deno, Node.js and Bun: more
 * silent sockets than the process may open descriptors (`ulimit -n 256`), from two addresses,
 * leave it alive, `/health` answered and an open session prompting, also while they are open; a socket that
 * sends its headers one byte at a time, never finishing, is closed after `--header-timeout`; and a
 * request line in absolute form naming a foreign host is refused like a forged `Host`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readdir, readFile, readlink } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import process from "node:process";
import { spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { withoutSpend } from "../_helpers/acp_schema.ts";

/** The bound on anything that should happen soon (a hung server fails the test, not the suite). */
const BOUND_MS = 20_000;
/** The descriptor limit the server runs under. */
const DESCRIPTOR_LIMIT = 256;

/** Settles like `promise`, or rejects after {@link BOUND_MS}. */
async function within<T>(promise: Promise<T>, what: () => string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`Timed out after ${BOUND_MS} ms: ${what()}`)),
      BOUND_MS,
    );
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts `serve --http --port 0` (under `ulimit -n`, when given) and resolves with its URL. */
async function startServe(
  runtime: Runtime,
  dirs: TempDirs,
  descriptorLimit?: number,
  extra: readonly string[] = [],
): Promise<{ agent: StdioAgent; url: string }> {
  const data = await dirs.make();
  const args = [
    ...runtime.args,
    "serve",
    "--http",
    "--port",
    "0",
    "--data-dir",
    data,
    "--header-timeout",
    "1",
    "--log-level",
    "info",
    ...extra,
  ];
  const agent = descriptorLimit === undefined
    ? spawnAgent(runtime.command, args)
    : spawnAgent("sh", [
      "-c",
      `ulimit -n ${descriptorLimit} && exec "$0" "$@"`,
      runtime.command,
      ...args,
    ]);
  const url = await within(
    new Promise<string>((resolve, reject) => {
      const check = (): void => {
        const match = /listening on (http:\/\/\S+)/.exec(agent.stderr());
        if (!match) return;
        agent.child.stderr?.off("data", check);
        resolve(match[1]!);
      };
      agent.child.stderr?.on("data", check);
      check();
      void agent.exited.then(({ code }) =>
        reject(new Error(`exited with ${code} before listening:\n${agent.stderr()}`))
      );
    }),
    () => `the server to listen:\n${agent.stderr()}`,
  );
  return { agent, url };
}

/** Posts one JSON-RPC request to a `/v1/acp/:id` URL and returns its result. */
async function rpc(url: string, id: number, method: string, params: unknown): Promise<unknown> {
  const response = await within(
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
    }),
    () => `the answer to ${method}`,
  );
  assert.equal(response.status, 200, `${method}: ${response.status}`);
  const answer = await response.json() as { result?: unknown; error?: unknown };
  assert.equal(answer.error, undefined, JSON.stringify(answer.error));
  return answer.result;
}

/** Sockets that connect and send nothing; counts those the server closed. */
interface SilentSockets {
  readonly sockets: readonly Socket[];
  /** Resolves once `count` of them are closed. */
  closed(count: number): Promise<void>;
  destroy(): void;
}

function silentSockets(url: string, perAddress: ReadonlyArray<[string, number]>): SilentSockets {
  const { hostname, port } = new URL(url);
  const sockets: Socket[] = [];
  let closed = 0;
  const waiters = new Set<() => void>();
  for (const [localAddress, count] of perAddress) {
    for (let at = 0; at < count; at++) {
      const socket = connect({ host: hostname, port: Number(port), localAddress });
      socket.on("error", () => {});
      socket.once("close", () => {
        closed++;
        for (const wake of [...waiters]) wake();
      });
      sockets.push(socket);
    }
  }
  return {
    sockets,
    closed: (count) =>
      new Promise<void>((resolve) => {
        const check = (): void => {
          if (closed < count) return;
          waiters.delete(check);
          resolve();
        };
        waiters.add(check);
        check();
      }),
    destroy: () => sockets.forEach((socket) => socket.destroy()),
  };
}

/** A slowloris client: request headers one byte at a time, never finishing; resolves on close. */
function slowloris(url: string): { closed: Promise<void>; stop(): void } {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.on("error", () => {});
  const text = `GET /health HTTP/1.1\r\nHost: ${hostname}\r\nX-Slow: ${"a".repeat(10_000)}`;
  let at = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drip = (): void => {
    if (socket.destroyed) return;
    socket.write(text[at++ % text.length]!);
    timer = setTimeout(drip, 50);
  };
  socket.once("connect", drip);
  const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
  void closed.then(() => clearTimeout(timer));
  return {
    closed,
    stop: () => {
      clearTimeout(timer);
      socket.destroy();
    },
  };
}

/** One raw HTTP/1.1 exchange; resolves with the status code (or "closed"). */
function rawStatus(url: string, head: string, body = ""): Promise<number | "closed"> {
  const { hostname, port } = new URL(url);
  return within(
    new Promise((resolve) => {
      const socket = connect(Number(port), hostname);
      socket.setEncoding("latin1");
      let answer = "";
      socket.on("data", (text: string) => {
        answer += text;
        const status = /^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1];
        if (status === undefined) return;
        socket.destroy();
        resolve(Number(status));
      });
      socket.on("error", () => {});
      socket.once("close", () => resolve("closed"));
      socket.write(`${head}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
    }),
    () => `an answer to ${head.split("\r\n")[0]}`,
  );
}

/** Resolves with the exit code after SIGTERM. */
async function stop(agent: StdioAgent): Promise<number | null> {
  process.kill(agent.child.pid as number, "SIGTERM");
  return (await within(agent.exited, () => `the server to exit:\n${agent.stderr()}`)).code;
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: serve --http survives more silent sockets than descriptors`, async () => {
    await using dirs = new TempDirs("acp-harness-http-sockets-");
    const { agent, url } = await startServe(runtime, dirs, DESCRIPTOR_LIMIT, [
      "--max-sockets-per-address",
      "32",
    ]);
    let flood: SilentSockets | undefined;
    try {
      const key = `${url}/v1/acp/sockets`;
      await rpc(key, 0, "initialize", { protocolVersion: 1 });
      const { sessionId } = await rpc(key, 1, "session/new", {
        cwd: await dirs.make(),
        mcpServers: [],
      }) as { sessionId: string };
      const prompt = { sessionId, prompt: [{ type: "text", text: "hello" }] };
      assert.deepEqual(withoutSpend(await rpc(key, 2, "session/prompt", prompt)), {
        stopReason: "end_turn",
      });

      // 200 from one address, 110 from another: 310, more than the server may open descriptors
      // (256), each address over its cap (32). The session's client is on 127.0.0.1.
      const hostile: ReadonlyArray<[string, number]> = [["127.0.0.2", 200], ["127.0.0.3", 110]];
      flood = silentSockets(url, hostile);
      // Refused ones are closed at once; the others once the header timeout (1 s) is over.
      await within(flood.closed(flood.sockets.length), () => "the silent sockets to close");
      assert.equal(agent.child.exitCode, null, agent.stderr());
      const health = await within(fetch(`${url}/health`), () => "/health");
      assert.equal(health.status, 200);
      assert.equal(await health.text(), "ok");
      assert.deepEqual(withoutSpend(await rpc(key, 3, "session/prompt", prompt)), {
        stopReason: "end_turn",
      });

      // Again, /health and the prompt while the flood's admitted sockets (at most 2 × 32) are
      // still open: every other one has been refused by then.
      flood.destroy();
      flood = silentSockets(url, hostile);
      await within(flood.closed(flood.sockets.length - 64), () => "the refused sockets to close");
      const during = await within(fetch(`${url}/health`), () => "/health during a flood");
      assert.equal(await during.text(), "ok");
      assert.deepEqual(withoutSpend(await rpc(key, 4, "session/prompt", prompt)), {
        stopReason: "end_turn",
      });
      await within(flood.closed(flood.sockets.length), () => "the second flood to close");
      assert.equal(agent.child.exitCode, null, agent.stderr());
    } finally {
      flood?.destroy();
      const code = await stop(agent);
      assert.equal(code, 0, agent.stderr());
    }
  });

  Deno.test(`${runtime.name}: serve --http closes a slowloris socket after --header-timeout`, async () => {
    await using dirs = new TempDirs("acp-harness-http-sockets-");
    const { agent, url } = await startServe(runtime, dirs);
    const client = slowloris(url);
    try {
      await within(client.closed, () => "the server to close the slowloris socket");
      const health = await within(fetch(`${url}/health`), () => "/health");
      assert.equal(await health.text(), "ok");
    } finally {
      client.stop();
      assert.equal(await stop(agent), 0, agent.stderr());
    }
  });

  Deno.test(`${runtime.name}: serve --http answers nothing but 403 on a port other than its own`, async () => {
    await using dirs = new TempDirs("acp-harness-http-sockets-");
    const { agent, url } = await startServe(runtime, dirs);
    try {
      const ports = await listeningPorts(agent.child.pid as number);
      const own = Number(new URL(url).port);
      assert.ok(ports.includes(own), `${ports} includes ${own}`);
      // Deno and Bun serve behind a relay from an inner port: a local process that finds it must
      // not get past the socket guard (Node.js has no inner port).
      const inner = ports.filter((port) => port !== own);
      assert.equal(inner.length, runtime.name === "node" ? 0 : 1, `${ports}`);
      for (const port of inner) {
        const response = await within(
          fetch(`http://127.0.0.1:${port}/health`),
          () => `an answer on the inner port ${port}`,
        );
        assert.equal(response.status, 403);
        await response.body?.cancel();
      }
      const health = await within(fetch(`${url}/health`), () => "/health");
      assert.equal(await health.text(), "ok");
    } finally {
      assert.equal(await stop(agent), 0, agent.stderr());
    }
  });

  Deno.test(`${runtime.name}: serve --http refuses an absolute-form request naming another host`, async () => {
    await using dirs = new TempDirs("acp-harness-http-sockets-");
    const { agent, url } = await startServe(runtime, dirs);
    try {
      const { host } = new URL(url);
      const body = JSON.stringify({
        jsonrpc: "2.0",
        id: 0,
        method: "initialize",
        params: { protocolVersion: 1 },
      });
      const post = (target: string): Promise<number | "closed"> =>
        rawStatus(
          url,
          `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nContent-Type: application/json`,
          body,
        );
      assert.equal(await post("/v1/acp/origin-form"), 200);
      assert.equal(await post(`http://${host}/v1/acp/own-authority`), 200);
      const foreign = await post("http://evil.example/v1/acp/foreign");
      const foreignPort = await post("http://evil.example:8080/acp");
      const upgrade = await rawStatus(
        url,
        [
          "GET http://evil.example/acp HTTP/1.1",
          `Host: ${host}`,
          "Upgrade: websocket",
          "Connection: Upgrade",
          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
          "Sec-WebSocket-Version: 13",
        ].join("\r\n"),
      );
      if (runtime.name === "bun") {
        // Bun builds the request's URL from `Host` and drops the line's authority: the request is
        // the one `Host` names, checked as such.
        assert.equal(foreign, 200);
        assert.equal(foreignPort, 200);
      } else {
        assert.equal(foreign, 403);
        assert.equal(foreignPort, 403);
        // Deno and Node.js refuse an upgrade whose target is not a path (400) before any check.
        assert.ok(upgrade === 400 || upgrade === 403, `upgrade: ${upgrade}`);
      }
    } finally {
      assert.equal(await stop(agent), 0, agent.stderr());
    }
  });
}

/** The TCP ports process `pid` listens on (from its descriptors and /proc/net/tcp). */
async function listeningPorts(pid: number): Promise<number[]> {
  const inodes = new Set<string>();
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined) inodes.add(inode);
  }
  const ports = new Set<number>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = await readFile(table, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT (hex); st 0A is LISTEN; field 9 is the inode.
      if (fields[3] === "0A" && fields[9] !== undefined && inodes.has(fields[9])) {
        ports.add(Number.parseInt(fields[1]?.split(":")[1] ?? "0", 16));
      }
    }
  }
  return [...ports];
}
