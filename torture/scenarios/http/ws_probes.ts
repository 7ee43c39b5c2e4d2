/**
 * The WebSocket probes of the `http` scenario: malformed handshakes and frames as a table of
 * cases, and seeded random frame sequences.
 *
 * @module
 */
import {
  type HandshakeOptions,
  INITIALIZE,
  OPCODE,
  RawWebSocket,
  within,
} from "../../http_client.ts";
import { checkStatus, type Env, LIMIT, type Rng } from "./_shared.ts";
import { type CustomProbe, deepParams, type Probe, randomBody } from "./probes.ts";

/** A WebSocket case: a handshake, something done on the socket, and what must follow. */
interface WsCase {
  readonly label: string;
  readonly handshake?: HandshakeOptions;
  /** The handshake must get one of these (101 for a socket; `any`: any but a 5xx). */
  readonly expectStatus?: readonly number[] | "any";
  /** Send `initialize` first (and wait for its answer). */
  readonly initialize?: boolean;
  readonly act?: (socket: RawWebSocket) => void | Promise<void>;
  /** A request sent afterwards must be answered. */
  readonly answers?: boolean;
  /** The server must close with this code. */
  readonly closes?: number;
}

function wsProbe(spec: WsCase): CustomProbe {
  return {
    kind: "custom",
    label: spec.label,
    async run(env: Env): Promise<void> {
      const handshake = await RawWebSocket.open(env.target, {
        headers: [`Authorization: Bearer ${env.target.token}`],
        ...spec.handshake,
      });
      const status = handshake.status ?? 0;
      const expect = spec.expectStatus ?? [101];
      checkStatus(env, spec.label, status, expect === "any" ? undefined : expect);
      const socket = handshake.socket;
      if (!socket) return;
      env.sockets.push(socket);
      try {
        const ask = (id: string, method: string, params: unknown): Promise<boolean> => {
          socket.send(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
          return socket.waitForMessage((text) => text.includes(`"id":"${id}"`), 10_000);
        };
        if (spec.initialize) await ask("ws-init", "initialize", INITIALIZE);
        await spec.act?.(socket);
        if (spec.answers) {
          const answered = spec.initialize
            ? await ask("ws-after", "session/list", {})
            : await ask("ws-after", "initialize", INITIALIZE);
          if (!answered && socket.isClosed) {
            env.context.fail(
              "other",
              "connection-lost",
              `${spec.label}: the server closed the socket (${
                socket.closeCode ?? "no close frame"
              })`,
            );
          } else if (!answered) {
            env.context.fail("other", "hang", `${spec.label}: a request after it got no answer`);
          }
        }
        if (spec.closes !== undefined) {
          await within(socket.closed, 10_000);
          if (socket.closeCode !== spec.closes) {
            env.context.fail(
              "other",
              "wrong-close",
              `${spec.label}: closed with ${
                socket.closeCode ?? "no close frame"
              } (expected ${spec.closes})`,
            );
          }
        }
      } finally {
        socket.destroy();
        await socket.closed;
      }
    },
  };
}

/** What the WebSocket cases' frames are made of. */
interface WsParts {
  readonly text: (value: string) => Uint8Array;
  /** Random bytes (drawn when the case runs). */
  readonly bytes: (length: number) => Uint8Array;
  /** An `initialize` request, to fragment and mask. */
  readonly init: string;
}

/** Handshakes that must be refused, or are the runtime's to accept. */
function handshakeCases(): WsCase[] {
  const fail = [400, 401, 403, 404, 405, 406, 426, 0];
  return [
    {
      label: "WebSocket without Sec-WebSocket-Key",
      handshake: { key: null },
      expectStatus: fail,
    },
    // Deno's upgrade does not check the version or the key's form: lenient, not wrong.
    { label: "WebSocket version 99", handshake: { version: "99" }, expectStatus: "any" },
    {
      label: "WebSocket with a short key",
      handshake: { key: "short" },
      expectStatus: "any",
    },
    {
      label: "WebSocket on /v1/acp/x",
      handshake: { path: "/v1/acp/x" },
      expectStatus: [404],
    },
    {
      label: "WebSocket on /health",
      handshake: { path: "/health" },
      expectStatus: fail.concat(200),
    },
    {
      label: "WebSocket by POST",
      handshake: { method: "POST" },
      expectStatus: fail.concat(415, 101),
    },
  ];
}

/** Odd frames: binary, bad UTF-8, unmasked, unknown opcodes, RSV bits, fragments. */
function frameCases({ text, bytes, init }: WsParts): WsCase[] {
  return [
    {
      label: "binary frame, then a request",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.binary, payload: bytes(1024) }),
      answers: true,
    },
    {
      label: "text that is not JSON",
      act: (socket) => socket.send("{oops"),
    },
    {
      label: "text that is not UTF-8",
      initialize: true,
      act: (socket) =>
        socket.sendFrame({ opcode: OPCODE.text, payload: new Uint8Array([0xff, 0xfe, 0x80]) }),
    },
    {
      label: "an unmasked frame",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.text, payload: text(init), mask: false }),
    },
    {
      label: "opcode 3",
      initialize: true,
      act: (socket) => socket.sendFrame({ opcode: 3, payload: bytes(10) }),
    },
    {
      label: "RSV1 set",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.text, payload: text(init), rsv: 4 }),
    },
    {
      label: "a 126-byte ping",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.ping, payload: bytes(126) }),
    },
    {
      label: "initialize in three fragments with a ping between",
      act: (socket) => {
        const third = Math.floor(init.length / 3);
        socket.sendFrame({ opcode: OPCODE.text, payload: text(init.slice(0, third)), fin: false });
        socket.sendFrame({ opcode: OPCODE.ping, payload: text("p") });
        socket.sendFrame({
          opcode: OPCODE.continuation,
          payload: text(init.slice(third, 2 * third)),
          fin: false,
        });
        socket.sendFrame({ opcode: OPCODE.continuation, payload: text(init.slice(2 * third)) });
      },
      answers: true,
    },
    {
      label: "a continuation first",
      act: (socket) => socket.sendFrame({ opcode: OPCODE.continuation, payload: text(init) }),
    },
  ];
}

/** Frames and messages over the limits, floods, odd closes, junk and deep nesting. */
function limitCases({ text, bytes }: WsParts): WsCase[] {
  return [
    {
      label: "a frame declaring 2^62 bytes, then gone",
      initialize: true,
      act: (socket) => {
        socket.sendFrame({ opcode: OPCODE.text, payload: bytes(1024), length: 2n ** 62n });
        socket.destroy();
      },
    },
    {
      label: "a text message over the limit",
      initialize: true,
      act: (socket) =>
        socket.send(
          JSON.stringify({ jsonrpc: "2.0", id: 1, method: "x", params: "y".repeat(LIMIT + 1000) }),
        ),
      closes: 1009,
    },
    {
      label: "a binary message over the limit",
      initialize: true,
      act: (socket) =>
        socket.sendFrame({ opcode: OPCODE.binary, payload: new Uint8Array(LIMIT + 1000) }),
      closes: 1009,
    },
    {
      label: "30 pings, then a request",
      initialize: true,
      act: (socket) => {
        for (let index = 0; index < 30; index++) {
          socket.sendFrame({ opcode: OPCODE.ping, payload: text(String(index)) });
        }
      },
      answers: true,
    },
    // Node.js's `ws` drops a client with more than 60 pings not yet answered (a flood guard).
    {
      label: "1,000 pings",
      initialize: true,
      act: (socket) => {
        for (let index = 0; index < 1000; index++) {
          socket.sendFrame({ opcode: OPCODE.ping, payload: text(String(index)) });
        }
      },
    },
    {
      label: "a close frame with code 999",
      act: (socket) =>
        socket.sendFrame({ opcode: OPCODE.close, payload: new Uint8Array([0x03, 0xe7]) }),
    },
    {
      label: "a close frame with a 1-byte payload",
      initialize: true,
      act: (socket) => socket.sendFrame({ opcode: OPCODE.close, payload: new Uint8Array([1]) }),
    },
    {
      label: "half a 64 KB frame, then gone",
      initialize: true,
      act: (socket) => {
        socket.sendFrame({ opcode: OPCODE.text, payload: bytes(32 * 1024), length: 64n * 1024n });
        socket.destroy();
      },
    },
    {
      label: "2,000 junk requests unread, then gone",
      initialize: true,
      act: (socket) => {
        for (let index = 0; index < 2000; index++) {
          socket.send(
            JSON.stringify({
              jsonrpc: "2.0",
              id: `j${index}`,
              method: "session/list",
              params: { x: index },
            }),
          );
        }
        socket.destroy();
      },
    },
    {
      label: "session/new before initialize",
      act: (socket) =>
        socket.send(
          JSON.stringify({
            jsonrpc: "2.0",
            id: "early",
            method: "session/new",
            params: { cwd: "/", mcpServers: [] },
          }),
        ),
    },
    {
      label: "2 MB of random bytes",
      act: (socket) => socket.sendRaw(bytes(2 * 1024 * 1024)),
    },
    {
      label: "a 50,000-deep object, then a request",
      initialize: true,
      act: (socket) => socket.send('{"a":'.repeat(50_000) + "1" + "}".repeat(50_000)),
      answers: true,
    },
    {
      label: "50,000-deep params, then a request",
      initialize: true,
      act: (socket) => socket.send(deepParams),
      answers: true,
    },
  ];
}

/** The WebSocket probes, table by table. */
export function wsProbes(rng: Rng): Probe[] {
  const parts: WsParts = {
    text: (value) => new TextEncoder().encode(value),
    bytes: (length) => Uint8Array.from({ length }, () => Math.floor(rng() * 256)),
    init: JSON.stringify({
      jsonrpc: "2.0",
      id: "ws-frag",
      method: "initialize",
      params: INITIALIZE,
    }),
  };
  return [...handshakeCases(), ...frameCases(parts), ...limitCases(parts)].map(wsProbe);
}

/** A random sequence of WebSocket frames, ended at random. */
export function wsFuzz(rng: Rng, n: number): Probe {
  const text = (value: string): Uint8Array => new TextEncoder().encode(value);
  const bytes = (length: number): Uint8Array =>
    Uint8Array.from({ length }, () => Math.floor(rng() * 256));
  const steps: Array<(socket: RawWebSocket) => void> = [];
  for (let count = 1 + Math.floor(rng() * 6); count > 0; count--) {
    const roll = Math.floor(rng() * 10);
    const body = randomBody(rng, n);
    const fin = rng() < 0.8;
    const mask = rng() < 0.9;
    const opcode = Math.floor(rng() * 16);
    const payload = bytes(Math.floor(rng() * 200));
    const code = Math.floor(rng() * 65536);
    steps.push((socket) => {
      if (roll < 4) socket.sendFrame({ opcode: OPCODE.text, payload: text(body), fin, mask });
      else if (roll < 5) socket.sendFrame({ opcode: OPCODE.binary, payload });
      else if (roll < 6) {
        socket.sendFrame({ opcode: OPCODE.ping, payload: payload.subarray(0, 125) });
      } else if (roll < 7) socket.sendFrame({ opcode, payload, fin, mask });
      else if (roll < 8) socket.sendFrame({ opcode: OPCODE.continuation, payload, fin });
      else if (roll < 9) {
        socket.sendFrame({
          opcode: OPCODE.close,
          payload: new Uint8Array([code >> 8, code & 0xff]),
        });
      } else socket.sendRaw(payload);
    });
  }
  const ending = Math.floor(rng() * 3);
  const initialize = rng() < 0.5;
  return wsProbe({
    label: `WebSocket fuzz ${n}`,
    initialize,
    act: async (socket) => {
      for (const step of steps) step(socket);
      if (ending === 0) socket.destroy();
      else if (ending === 1) socket.end();
      else await socket.close(1000, 2_000);
    },
  });
}
