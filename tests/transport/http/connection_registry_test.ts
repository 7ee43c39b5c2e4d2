import assert from "node:assert/strict";
import { createLogger } from "../../../src/log/logger.ts";
import type { AgentServerConnection } from "../../../src/server/agent_server.ts";
import type { AnyMessage, Stream } from "../../../src/transport/acp.ts";
import {
  ConnectionRegistry,
  type ConnectionRegistryOptions,
} from "../../../src/transport/http/connection_registry.ts";
import { ConnectionLimitError } from "../../../src/transport/http/url_keyed_profile.ts";

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

/** A registry over a fake server; `connections` holds what it connected, in order. */
function registry(options: Partial<ConnectionRegistryOptions> = {}) {
  const connections: FakeConnection[] = [];
  const logs: string[] = [];
  const made = new ConnectionRegistry({
    server: {
      connect: () => {
        const connection = fakeConnection(`c${connections.length}`);
        connections.push(connection);
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
  return { registry: made, connections, logs };
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
