import assert from "node:assert/strict";
import { createLogger } from "../../../src/log/logger.ts";
import type { AgentServerConnection } from "../../../src/server/agent_server.ts";
import type { AnyMessage, Stream } from "../../../src/transport/acp.ts";
import {
  ConnectionRegistry,
  type ConnectionRegistryOptions,
} from "../../../src/transport/http/connection_registry.ts";
import { ConnectionLimitError } from "../../../src/transport/http/url_keyed_profile.ts";
import { TokenRevokedError } from "../../../src/transport/http/connection_registry.ts";
import { TenantDirectory, type TenantIdentity } from "../../../src/server/tenants.ts";

/** A connection handle the test closes, or that records being closed by the registry. */
interface FakeConnection extends AgentServerConnection {
  pending: number;
  /** Resolves once the registry called `close()`. */
  readonly closeCalled: Promise<void>;
  end(): void;
}

function fakeConnection(id: string): FakeConnection {
  let end!: () => void;
  let called!: () => void;
  const closed = new Promise<void>((resolve) => end = resolve);
  const closeCalled = new Promise<void>((resolve) => called = resolve);
  return {
    id,
    closed,
    disconnected: closed,
    pending: 0,
    closeCalled,
    end,
    drain: () => Promise.resolve(),
    close() {
      called();
      end();
      return closed;
    },
  };
}

/**
 * A registry over a fake server; `connections` holds what it connected, in order, and `inputs`
 * the message stream each was given.
 */
function registry(options: Partial<ConnectionRegistryOptions> = {}) {
  const connections: FakeConnection[] = [];
  const inputs: ReadableStream<AnyMessage>[] = [];
  const logs: string[] = [];
  const made = new ConnectionRegistry({
    server: {
      connect: (given) => {
        const connection = fakeConnection(`c${connections.length}`);
        connections.push(connection);
        inputs.push(given.readable);
        return connection;
      },
    },
    maxConnections: 3,
    maxSessionsPerConnection: 8,
    idleTimeoutMs: 600_000,
    logger: createLogger("debug", (line) => logs.push(line)),
    now: () => Date.now(),
    ...options,
  });
  return { registry: made, connections, inputs, logs };
}

function stream(): Stream {
  const pipe = new TransformStream<AnyMessage, AnyMessage>();
  return { readable: pipe.readable, writable: pipe.writable };
}

Deno.test("ConnectionRegistry refuses one more connection at each limit, and frees a closed one's place", async () => {
  const { registry: open, connections, logs } = registry({ maxConnectionsPerAddress: 2 });
  const peer = { remoteAddress: "10.0.0.1" };
  open.connect(stream(), "http", peer);
  open.connect(stream(), "http", peer);
  assert.equal(open.refusal(peer)?.status, 429);
  assert.throws(
    () => open.connect(stream(), "http", peer),
    (error: unknown) => error instanceof ConnectionLimitError && error.status === 429,
  );
  assert.equal(open.refusal({ remoteAddress: "10.0.0.2" }), undefined);
  open.connect(stream(), "websocket", {});
  assert.equal(open.size, 3);
  assert.equal(open.refusal({})?.status, 503);
  assert.throws(
    () => open.connect(stream(), "http", {}),
    (error: unknown) => error instanceof ConnectionLimitError && error.status === 503,
  );
  connections[0]!.end();
  // The registry's own callback on `closed` was queued first, so it has run by now.
  await connections[0]!.closed;
  assert.equal(open.size, 2);
  assert.equal(open.refusal(peer), undefined);
  assert(logs.some((line) => /connection opened.*"transport":"websocket"/.test(line)));
  assert(logs.some((line) => /connection closed.*"connectionId":"c0"/.test(line)));
  open.close();
  assert.equal(open.draining, true);
  assert.equal(open.refusal({})?.status, 503);
  assert.throws(() => open.connect(stream(), "http", {}), ConnectionLimitError);
});

Deno.test("ConnectionRegistry closes a connection idle for the idle time, not one with a request being handled", async () => {
  // Time moves on 200 ms each time the registry looks at the clock (once a sweep or so).
  let clock = 0;
  const { registry: open, connections, logs } = registry({
    idleTimeoutMs: 400,
    now: () => clock += 200,
  });
  open.connect(stream(), "http", {});
  open.connect(stream(), "http", {});
  const [idle, busy] = connections as [FakeConnection, FakeConnection];
  busy.pending = 1;
  let busyClosed = false;
  void busy.closeCalled.then(() => busyClosed = true);
  await idle.closeCalled;
  assert(logs.some((line) => /closing idle connection.*"connectionId":"c0"/.test(line)));
  assert.equal(busyClosed, false);
  // Idleness counts from the end of the request (the first sweep that finds none).
  busy.pending = 0;
  await busy.closeCalled;
  assert(logs.some((line) => /closing idle connection.*"connectionId":"c1"/.test(line)));
  open.close();
});

/** Tenant `ci` with the given token hashes (any hex), and an identity of its first. */
function tenants(...hashes: string[]): { directory: TenantDirectory; identity: TenantIdentity } {
  const directory = new TenantDirectory();
  directory.replace([{ name: "ci", tokens: hashes, limits: {} }]);
  const scope = { name: "ci", allowedRoots: undefined, budgets: {}, usage: {} as never };
  return { directory, identity: { scope, tokenHash: hashes[0]! } };
}

Deno.test("ConnectionRegistry checks a connection's token again where it opens it, and on each message", async () => {
  const old = "a".repeat(64);
  const kept = "b".repeat(64);
  const { directory, identity } = tenants(old, kept);
  const { registry: open, connections, inputs, logs } = registry({
    holds: (given) => directory.holds(given),
  });
  const keptIdentity = { ...identity, tokenHash: kept };
  const revokedSockets: string[] = [];
  const client = stream();
  open.connect(client, "websocket", { identity }, () => revokedSockets.push("c0"));
  open.connect(stream(), "http", { identity: keptIdentity });
  assert.equal(open.unauthorized({ identity }), undefined);
  assert.equal(open.refusal({ identity }), undefined);
  // The reload: the old token goes (nothing has closed its connection yet).
  directory.replace([{ name: "ci", tokens: [kept], limits: {} }]);
  const refused = open.refusal({ identity });
  assert.equal(refused?.status, 401);
  assert.deepEqual(await refused?.json(), {
    type: "about:blank",
    title: "Unauthorized",
    status: 401,
    detail: "A valid bearer token is required (Authorization: Bearer <token>)",
  });
  assert.equal(open.unauthorized({ identity })?.status, 401);
  assert.equal(open.unauthorized({ identity: keptIdentity }), undefined);
  assert.equal(open.unauthorized({}), undefined);
  assert.throws(
    () => open.connect(stream(), "http", { identity }),
    (error: unknown) => error instanceof TokenRevokedError && error.status === 401,
  );
  assert.equal(connections.length, 2, "the server was not asked for a connection");
  // A message on the old token's open connection ends it, its socket refused, and goes no further.
  const received = inputs[0]!.getReader().read(); // the server reads, as a connection does
  const writer = client.writable.getWriter();
  void writer.write({ jsonrpc: "2.0", id: 1, method: "session/list", params: {} });
  await connections[0]!.closeCalled;
  assert.deepEqual(revokedSockets, ["c0"]);
  assert(logs.some((line) => /closing a connection whose token was removed.*"c0"/.test(line)));
  void writer.close();
  assert.equal((await received).done, true, "nothing reached the server");
  // closeRevoked counts it no more; the kept token's connection is untouched.
  assert.equal(open.closeRevoked((given) => directory.holds(given)), 0);
  assert.equal(open.size, 1);
  open.close();
});
