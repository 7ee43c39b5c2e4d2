/**
 * A real load balancer in front of three instances: HAProxy on `examples/deploy/haproxy.cfg`,
 * unchanged, in front of `serve --http` on Deno, Node.js and Bun sharing one PostgreSQL database.
 * Many clients at once (spread over the instances, each connection on one); an instance killed
 * with SIGKILL mid-turn (the client reconnects through the proxy, lands elsewhere, loads the
 * session once the lease expired and continues it with nothing acknowledged lost); an instance
 * drained with SIGTERM while clients work (their running turns answered `cancelled`, it exits 0,
 * they reconnect through the proxy elsewhere and continue at once).
 */
import { createHttpStream } from "@agentclientprotocol/sdk/experimental/http-client";
import assert from "node:assert/strict";
import {
  type AcpTestClient,
  exitWithin,
  memoryClient,
  type StdioAgent,
} from "../_helpers/acp_client.ts";
import { SHUTDOWN_GRACE_MS } from "../../src/cli/cli.ts";
import { haproxyAvailable, type HaproxyProcess, startHaproxy } from "../_helpers/haproxy.ts";
import { startInstances } from "../_helpers/instances.ts";
import { postgresTest } from "../_helpers/postgres.ts";

const AVAILABLE = haproxyAvailable();
const TOKEN = "lb-token";
const AUTH = { authorization: `Bearer ${TOKEN}` };
/** Short, so a takeover after a SIGKILL comes within seconds; long enough to be seen refused. */
const LEASE_TTL = "3";

/**
 * One script for every instance (the proxy picks the instance): a first answer; then a write that
 * asks permission, which the SIGKILL test's client holds; then any later request of the session,
 * wherever its count stands after the takeover, continues.
 */
const SCRIPT = [
  { text: "First answer." },
  { toolCalls: [{ id: "w1", name: "write_file", arguments: { path: "o.txt", content: "x" } }] },
  { text: "Continuing." },
  { text: "Continuing." },
  { text: "Continuing." },
];

/** Three instances (s1 Deno, s2 Node.js, s3 Bun) on one fresh database behind HAProxy. */
interface Cluster extends AsyncDisposable {
  readonly cwd: string;
  readonly proxy: HaproxyProcess;
  /** The instances, in HAProxy's order (`s1`, `s2`, `s3`). */
  readonly instances: readonly StdioAgent[];
  /** A new SDK HTTP client of `/acp` through the proxy. */
  client(): AcpTestClient;
}

async function cluster(): Promise<Cluster> {
  const started = await startInstances({ script: SCRIPT, token: TOKEN, leaseTtl: LEASE_TTL });
  const clients: AcpTestClient[] = [];
  let proxy: HaproxyProcess | undefined;
  const dispose = async (): Promise<void> => {
    await Promise.all(clients.map(closeClient));
    await proxy?.stop();
    await started[Symbol.asyncDispose]();
  };
  try {
    proxy = await startHaproxy(started.urls);
  } catch (error) {
    await dispose();
    throw error;
  }
  const running = proxy;
  return {
    cwd: started.cwd,
    proxy: running,
    instances: started.agents,
    client() {
      const client = memoryClient(
        createHttpStream(`${running.url}/acp`, { headers: AUTH, fetch: tolerantFetch }),
      );
      clients.push(client);
      return client;
    },
    [Symbol.asyncDispose]: dispose,
  };
}

/**
 * `fetch` for the SDK client of an instance that may die: a failed request reads as `410 Gone`,
 * which closes the client's transport instead of rejecting inside it.
 */
const tolerantFetch: typeof fetch = (input, init) =>
  fetch(input, init).catch(() => new Response(null, { status: 410 }));

async function closeClient(client: AcpTestClient): Promise<void> {
  await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
}

/** A request of the proxy's log: `<peer> <backend>/<server> <status> <method> <path> conn=… new=…`. */
interface Routed {
  readonly backend: string;
  readonly server: string;
  readonly status: number;
  readonly method: string;
  /** The `Acp-Connection-Id` the request carried, or the one its answer assigned. */
  readonly connection: string | undefined;
  readonly assigned: boolean;
}

function routed(logs: readonly string[]): Routed[] {
  const out: Routed[] = [];
  for (const line of logs) {
    const m = /^\S+ (\w+)\/(\S+) (-?\d+) (\S+) \S+ conn=(\S*) new=(\S*)$/.exec(line);
    if (!m) continue;
    const [, backend, server, status, method, carried, assigned] = m as unknown as string[];
    const id = [carried, assigned].find((v) => v !== undefined && v !== "" && v !== "-");
    out.push({
      backend: backend!,
      server: server!,
      status: Number(status),
      method: method!,
      connection: id,
      assigned: assigned !== "" && assigned !== "-",
    });
  }
  return out;
}

/** Opens a connection through the proxy and returns the instance (`s1`…) that took it. */
async function connect(c: Cluster, client: AcpTestClient): Promise<string> {
  const from = c.proxy.logs.length;
  await client.initialize();
  const line = await c.proxy.waitForLog(/ acp_rfd\/s\d 200 POST \S+ conn=- new=[^-\s]/, from);
  return /acp_rfd\/(s\d)/.exec(line)![1]!;
}

/** A test that needs HAProxy and PostgreSQL (skipped loudly without either; in CI it fails). */
function lbTest(name: string, fn: () => Promise<void>): void {
  if (AVAILABLE) postgresTest(name, fn);
  else Deno.test({ name, ignore: true, fn }); // the loud line was printed by haproxyAvailable()
}

function instanceOf(c: Cluster, server: string): StdioAgent {
  return c.instances[Number(server.slice(1)) - 1]!;
}

function messages(client: AcpTestClient, sessionId: string): string[] {
  return client.updates(sessionId)
    .filter(({ update }) => String(update.sessionUpdate).endsWith("message_chunk"))
    .map(({ update }) =>
      `${update.sessionUpdate}:${(update.content as { text?: string } | undefined)?.text ?? ""}`
    );
}

lbTest(
  "haproxy: 30 clients at once are spread over three instances, each connection on one",
  async () => {
    await using c = await cluster();
    const clients = Array.from({ length: 30 }, () => c.client());
    const stops = await Promise.all(clients.map(async (client) => {
      await client.initialize();
      const sessionId = await client.newSession(c.cwd);
      const stop = await client.prompt(sessionId, "hello");
      assert.deepEqual(client.problems, []);
      await closeClient(client);
      return stop;
    }));
    assert.deepEqual(stops, Array(30).fill("end_turn"));

    const log = routed(c.proxy.logs);
    const opened = log.filter((r) => r.assigned);
    assert.equal(opened.length, 30, c.proxy.logs.join("\n"));
    const home = new Map(opened.map((r) => [r.connection!, r.server]));
    assert.equal(home.size, 30);
    // Spread: every instance took connections.
    assert.deepEqual([...new Set(home.values())].sort(), ["s1", "s2", "s3"]);
    // Sticky: every request that carried a connection id reached the instance that assigned it.
    const carried = log.filter((r) => r.connection !== undefined && !r.assigned);
    assert.ok(carried.length >= 30 * 3, `${carried.length} requests with a connection id`);
    for (const r of carried) {
      assert.equal(r.server, home.get(r.connection!), `${r.method} of ${r.connection}`);
      assert.ok(r.status < 400 || r.method === "DELETE", JSON.stringify(r));
    }
  },
);

lbTest(
  "haproxy: an instance killed with SIGKILL mid-turn; the client reconnects elsewhere, loads after the lease expired, continues",
  async () => {
    await using c = await cluster();
    const first = c.client();
    let held = false;
    // The permission ask of the second turn is held: the turn stays running on its instance.
    first.handlers.set("session/request_permission", () => {
      held = true;
      return new Promise(() => {});
    });
    const server = await connect(c, first);
    const sessionId = await first.newSession(c.cwd);
    assert.equal(await first.prompt(sessionId, "Remember this"), "end_turn");
    assert.ok(messages(first, sessionId).includes("agent_message_chunk:First answer."));
    first.prompt(sessionId, "Write it down").catch(() => {});
    await first.waitFor((frames) => frames.some((f) => f.method === "session/request_permission"));
    assert.ok(held);

    const victim = instanceOf(c, server);
    victim.child.kill("SIGKILL");
    await victim.exited;
    await closeClient(first);

    // A new connection through the proxy: the dead instance is skipped (redispatch on a refused
    // connect, then its failed health checks take it out).
    const second = c.client();
    const landed = await connect(c, second);
    assert.notEqual(landed, server);
    // The lease of the dead instance lives up to --lease-ttl after its last heartbeat: refused
    // first, then taken over. Nothing signals a lease expiring, so the load is retried (bounded).
    const load = { sessionId, cwd: c.cwd, mcpServers: [] };
    const refused = await second.requestRaw("session/load", load);
    const error = refused.error as { code: number; message: string } | undefined;
    assert.ok(error, "the load succeeded while the dead instance's lease lived");
    assert.match(error.message, /open in another acp-harness instance/);
    const deadline = Date.now() + 20_000;
    for (;;) {
      const answer = await second.requestRaw("session/load", load);
      if (answer.error === undefined) break;
      assert.match((answer.error as { message: string }).message, /another acp-harness instance/);
      assert.ok(Date.now() < deadline, "the lease never expired");
      await new Promise((resolve) => setTimeout(resolve, 200)); // between retries of a refusal
    }
    // The replay holds the answered turn whole, in order (it comes on the session's stream, which
    // the client opens for the load; the commands list follows the replay).
    await second.waitFor(() =>
      second.updates(sessionId).some(({ update }) =>
        update.sessionUpdate === "available_commands_update"
      )
    );
    const replayed = messages(second, sessionId);
    assert.deepEqual(replayed.slice(0, 2), [
      "user_message_chunk:Remember this",
      "agent_message_chunk:First answer.",
    ]);
    // Of the killed turn, never answered, the last uncommitted batch may be lost on PostgreSQL
    // although the client saw it (docs/sessions.md, "What survives a crash"): its prompt is there
    // or not, never anything after a gap.
    assert.ok(
      replayed.length === 2 ||
        (replayed.length === 3 && replayed[2] === "user_message_chunk:Write it down"),
      String(replayed),
    );
    assert.equal(await second.prompt(sessionId, "Go on"), "end_turn");
    assert.equal(messages(second, sessionId).at(-1), "agent_message_chunk:Continuing.");
    assert.deepEqual(second.problems, []);
    // Every request of the new connection stayed on the instance it landed on.
    const log = routed(c.proxy.logs);
    const id = log.find((r) => r.assigned && r.server === landed)!.connection;
    assert.ok(log.filter((r) => r.connection === id).every((r) => r.server === landed));
  },
);

/** What one client of the drain test saw of its session. */
interface Seen {
  readonly client: AcpTestClient;
  readonly server: string;
  readonly sessionId: string;
}

const allow = (): unknown => ({ outcome: { outcome: "selected", optionId: "allow_once" } });

/** Opens clients through the proxy until every instance holds `each` of them, one turn done each. */
async function spread(c: Cluster, each: number): Promise<Seen[]> {
  const seen: Seen[] = [];
  const count = (server: string): number => seen.filter((s) => s.server === server).length;
  for (let i = 0; i < 8 * each && ["s1", "s2", "s3"].some((s) => count(s) < each); i++) {
    const client = c.client();
    client.handlers.set("session/request_permission", allow);
    const server = await connect(c, client);
    const sessionId = await client.newSession(c.cwd);
    assert.equal(await client.prompt(sessionId, "Remember this"), "end_turn");
    if (count(server) < each) seen.push({ client, server, sessionId });
    else await closeClient(client);
  }
  assert.deepEqual(["s1", "s2", "s3"].map(count), [each, each, each]);
  return seen;
}

lbTest(
  "haproxy: an instance drained with SIGTERM while clients work; running turns answered, they reconnect elsewhere and continue",
  async () => {
    await using c = await cluster();
    const seen = await spread(c, 2);
    const drained = seen.filter((s) => s.server === "s2"); // Node.js
    // Their second turn is running, waiting on a permission answer that never comes.
    const turns = drained.map(({ client, sessionId }) => {
      client.handlers.set("session/request_permission", () => new Promise(() => {}));
      const turn = client.prompt(sessionId, "Write it down");
      turn.catch(() => {}); // awaited below, after the signal
      return turn;
    });
    await Promise.all(
      drained.map(({ client }) =>
        client.waitFor((frames) => frames.some((f) => f.method === "session/request_permission"))
      ),
    );
    // What each drained client was told before the signal: none of it may be lost.
    const acknowledged = drained.map(({ client, sessionId }) => messages(client, sessionId));
    for (const told of acknowledged) assert.ok(told.includes("agent_message_chunk:First answer."));
    const from = c.proxy.logs.length;
    const node = instanceOf(c, "s2");
    Deno.kill(node.child.pid as number, "SIGTERM");
    // Every running turn is answered `cancelled` (docs/http.md) through the proxy (without
    // `option http-no-delay` the answer came late, with the streams' end, and the SDK client,
    // which closes on the connection stream's end, dropped it); the instance exits 0 within its
    // grace.
    await Promise.all(
      drained.map(({ client }) =>
        client.waitFor(
          (frames) =>
            frames.some((f) =>
              (f.result as { stopReason?: string } | undefined)?.stopReason === "cancelled"
            ),
          SHUTDOWN_GRACE_MS * 2,
        )
      ),
    );
    assert.deepEqual(await Promise.all(turns), ["cancelled", "cancelled"]);
    assert.equal(await exitWithin(node, SHUTDOWN_GRACE_MS * 2), 0, node.stderr());
    // HAProxy takes it out.
    await c.proxy.waitForLog(/acp_rfd\/s2 is DOWN/, from);
    await Promise.all(drained.map(({ client }) => closeClient(client)));

    // The drained clients reconnect through the proxy, land on the others and load their session
    // at once (SIGTERM released its leases): the replay holds everything they had been told, the
    // cancelled turn's prompt and tool call, and the session continues.
    for (const [i, { sessionId }] of drained.entries()) {
      const again = c.client();
      again.handlers.set("session/request_permission", allow);
      assert.notEqual(await connect(c, again), "s2");
      await again.request("session/load", { sessionId, cwd: c.cwd, mcpServers: [] });
      await again.waitFor(() =>
        messages(again, sessionId).includes("user_message_chunk:Write it down") &&
        again.updates(sessionId).some(({ update }) => update.toolCallId === "w1")
      );
      const replayed = messages(again, sessionId);
      assert.deepEqual(
        acknowledged[i]!.filter((m) => !replayed.includes(m)),
        [],
        `lost: ${replayed}`,
      );
      assert.deepEqual(replayed.slice(0, 2), [
        "user_message_chunk:Remember this",
        "agent_message_chunk:First answer.",
      ]);
      assert.equal(await again.prompt(sessionId, "Go on"), "end_turn");
      assert.equal(messages(again, sessionId).at(-1), "agent_message_chunk:Continuing.");
      assert.deepEqual(again.problems, []);
    }
    // The clients of the other instances never noticed: their next turn runs where they are.
    for (const { client, sessionId } of seen.filter((s) => s.server !== "s2")) {
      assert.equal(await client.prompt(sessionId, "Still here"), "end_turn");
      assert.deepEqual(client.problems, []);
    }
    for (const { client } of drained) assert.deepEqual(client.problems, []);
    // No request after the DOWN went to s2.
    const down = c.proxy.logs.findIndex((line, i) => i >= from && /acp_rfd\/s2 is DOWN/.test(line));
    assert.ok(routed(c.proxy.logs.slice(down)).every((r) => r.server !== "s2"));
  },
);
