/**
 * nginx on `examples/deploy/nginx.conf`, its placeholders filled as a user fills them, in front of
 * `serve --http` on Deno, Node.js and Bun sharing one PostgreSQL database: `nginx -t` accepts it;
 * clients over HTTP and WebSocket are spread over the instances with every request of a connection
 * on one; a turn streams through it (SSE not buffered); nginx stops leaving no process behind.
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { WebSocket as NodeWebSocket } from "ws";
import { type AcpTestClient, memoryClient } from "../_helpers/acp_client.ts";
import { startInstances } from "../_helpers/instances.ts";
import {
  checkNginxConfig,
  nginxAvailable,
  type NginxProcess,
  renderNginxConfig,
  startNginx,
} from "../_helpers/nginx.ts";
import { postgresTest } from "../_helpers/postgres.ts";

const AVAILABLE = nginxAvailable();
const TOKEN = "nginx-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** Each session: a write that asks permission, then an answer. */
const SCRIPT = [
  { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "o.txt", content: "x" } }] },
  { text: "Written." },
];

const VALUES = {
  ACP_LISTEN: "127.0.0.1:18080",
  ACP_SERVER_1: "127.0.0.1:17341",
  ACP_SERVER_2: "127.0.0.1:17342",
  ACP_SERVER_3: "127.0.0.1:17343",
};

/** A test that needs nginx (skipped loudly without it; in CI it fails). */
function nginxTest(name: string, fn: () => Promise<void>, postgres = false): void {
  if (!AVAILABLE) Deno.test({ name, ignore: true, fn }); // the loud line was printed
  else if (postgres) postgresTest(name, fn);
  else Deno.test(name, fn);
}

async function closeClient(client: AcpTestClient): Promise<void> {
  await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
}

/** A request of nginx's log: `<peer> <upstream> <status> <method> <uri> conn=… new=…`. */
interface Routed {
  readonly upstream: string;
  readonly status: number;
  readonly method: string;
  readonly uri: string;
  /** The `Acp-Connection-Id` the request carried, or the one its answer assigned. */
  readonly connection: string | undefined;
  readonly assigned: boolean;
}

function routed(logs: readonly string[]): Routed[] {
  const out: Routed[] = [];
  for (const line of logs) {
    const m = /^\S+ (.+?) (\d{3}) (\S+) (\S+) conn=(\S*) new=(\S*)$/.exec(line);
    if (!m) continue;
    const [, upstream, status, method, uri, carried, assigned] = m as unknown as string[];
    const given = (v: string | undefined): v is string => v !== undefined && v !== "" && v !== "-";
    out.push({
      upstream: upstream!,
      status: Number(status),
      method: method!,
      uri: uri!,
      connection: [carried, assigned].find(given),
      assigned: given(assigned),
    });
  }
  return out;
}

/** The pids of `pid`'s children (from /proc). */
async function childrenOf(pid: number): Promise<number[]> {
  const out: number[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // pid (comm) state ppid …: the comm may hold spaces, so read after its closing parenthesis.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (ppid === pid) out.push(Number(entry));
  }
  return out;
}

async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
  return stat !== "" && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
}

nginxTest("nginx: the example config, filled as envsubst fills it, passes nginx -t", async () => {
  const { code, output } = await checkNginxConfig(VALUES);
  assert.equal(code, 0, output);
  assert.match(output, /syntax is ok/);
  assert.match(output, /test is successful/);
  // Only the four placeholders are filled: nginx's own variables stay.
  const rendered = await renderNginxConfig(VALUES);
  assert.match(rendered, /proxy_pass http:\/\/\$acp_instance;/);
  assert.match(rendered, /server 127\.0\.0\.1:17342 /);
  await assert.rejects(renderNginxConfig({ ACP_LISTEN: "127.0.0.1:1" }), /no value/);
});

nginxTest(
  "nginx: clients spread over three instances, each connection on one, a turn streamed through it, clean stop",
  async () => {
    await using instances = await startInstances({ script: SCRIPT, token: TOKEN, leaseTtl: "10" });
    const ports = instances.urls.map((url) => url.replace(/^http:\/\//, ""));
    let proxy: NginxProcess | undefined = await startNginx(instances.urls);
    const clients: AcpTestClient[] = [];
    try {
      const started = proxy;
      // Nine HTTP clients and one WebSocket client at once.
      for (let i = 0; i < 9; i++) {
        clients.push(memoryClient(createHttpStream(`${started.url}/acp`, { headers: AUTH })));
      }
      const ws = memoryClient(createWebSocketStream(`${started.url.replace("http", "ws")}/acp`, {
        WebSocket: NodeWebSocket as never,
        headers: AUTH,
      }));
      clients.push(ws);
      const stops = await Promise.all(clients.map(async (client) => {
        // The turn waits on this answer: the permission ask, and the tool call's update before it,
        // reached the client while the turn ran, so nginx did not hold the stream back.
        let streamedWhileRunning = false;
        let sessionId = "";
        client.handlers.set("session/request_permission", () => {
          streamedWhileRunning = client.updates(sessionId).some(({ update }) =>
            update.sessionUpdate === "tool_call" && update.toolCallId === "w1"
          );
          return { outcome: { outcome: "selected", optionId: "allow_once" } };
        });
        await client.initialize();
        sessionId = await client.newSession(instances.cwd);
        const stop = await client.prompt(sessionId, "Write it");
        assert.ok(streamedWhileRunning, "the tool call's update came after the permission ask");
        const texts = client.updates(sessionId)
          .filter(({ update }) => update.sessionUpdate === "agent_message_chunk")
          .map(({ update }) => (update.content as { text?: string }).text);
        assert.deepEqual(texts, ["Written."]);
        assert.deepEqual(client.problems, []);
        return stop;
      }));
      assert.deepEqual(stops, Array(10).fill("end_turn"));
      await Promise.all(clients.map(closeClient));

      const log = routed(started.logs);
      // The HTTP clients' connections: each assigned by the instance that answered its initialize.
      const opened = log.filter((r) => r.assigned && r.method === "POST");
      assert.equal(opened.length, 9, started.logs.join("\n"));
      const home = new Map(opened.map((r) => [r.connection!, r.upstream]));
      assert.equal(home.size, 9);
      for (const upstream of home.values()) assert.ok(ports.includes(upstream), upstream);
      // Spread: the new connections' random instances were more than one.
      assert.ok(new Set(home.values()).size >= 2, [...home.values()].join(" "));
      // Sticky: every request that carried a connection id reached the instance that assigned it.
      const carried = log.filter((r) => r.connection !== undefined && !r.assigned);
      assert.ok(carried.length >= 9 * 4, `${carried.length} requests with a connection id`);
      for (const r of carried) {
        if (!home.has(r.connection!)) continue; // the WebSocket's own id, on its one socket
        assert.equal(r.upstream, home.get(r.connection!), `${r.method} of ${r.connection}`);
        assert.ok(r.status < 400, JSON.stringify(r));
      }
      // The WebSocket was upgraded through it (101) and stayed on one instance (one socket).
      assert.equal(log.filter((r) => r.method === "GET" && r.status === 101).length, 1);

      // A clean stop: the master and its workers are gone.
      const workers = await childrenOf(started.pid);
      assert.ok(workers.length >= 1);
      await started.stop();
      proxy = undefined;
      assert.equal(await alive(started.pid), false);
      for (const pid of workers) assert.equal(await alive(pid), false, `worker ${pid} left`);
    } finally {
      await Promise.all(clients.map(closeClient));
      await proxy?.stop();
    }
  },
  true,
);
