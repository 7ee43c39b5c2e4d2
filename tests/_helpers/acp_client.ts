/**
 * A raw JSON-RPC test client for driving the server, in memory or over a child's stdio. It
 * records every inbound frame and checks each against the ACP schema.
 *
 * @module
 */
import { type ChildProcess, spawn, type SpawnOptions } from "node:child_process";
import type { AnyMessage, Stream } from "../../mod.ts";
import { schemaProblems } from "./acp_schema.ts";

/** A JSON-RPC error answer. */
export class RpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(error: { code: number; message: string; data?: unknown }) {
    super(error.message);
    this.code = error.code;
    this.data = error.data;
  }
}

type Handler = (params: unknown, method: string) => unknown | Promise<unknown>;
type Frame = Record<string, unknown>;

/** Drives an agent over JSON-RPC frames. */
export class AcpTestClient {
  /** Every inbound frame, in order. */
  readonly frames: Frame[] = [];
  /** Schema problems found in inbound frames. */
  readonly problems: string[] = [];
  /** Agent-to-client request handlers by method. */
  readonly handlers = new Map<string, Handler>();
  readonly #send: (message: unknown) => Promise<void>;
  readonly #pending = new Map<
    string | number,
    { method: string; resolve: (frame: Frame) => void }
  >();
  readonly #sentMethods = new Map<string | number, string>();
  readonly #waiters = new Set<() => void>();
  readonly #answering = new Set<Promise<void>>();
  #nextId = 0;

  constructor(send: (message: unknown) => Promise<void>) {
    this.#send = send;
  }

  /** Feeds one inbound frame. */
  receive(frame: Frame): void {
    this.frames.push(frame);
    const id = frame.id as string | number | null | undefined;
    const method = typeof frame.method === "string" ? frame.method : undefined;
    const answered = method === undefined && id !== undefined && id !== null
      ? this.#sentMethods.get(id)
      : undefined;
    let problems: string[];
    try {
      problems = schemaProblems(frame, answered);
    } catch (error) {
      problems = [String(error)];
    }
    for (const problem of problems) {
      this.problems.push(`${JSON.stringify(frame).slice(0, 200)}: ${problem}`);
    }
    if (method !== undefined && id !== undefined) {
      const answering = this.#answer(id as string | number, method, frame.params);
      this.#answering.add(answering);
      void answering.finally(() => this.#answering.delete(answering));
    } else if (method === undefined && id !== undefined && id !== null) {
      const pending = this.#pending.get(id);
      this.#pending.delete(id);
      pending?.resolve(frame);
    }
    for (const wake of this.#waiters) wake();
  }

  async #answer(id: string | number, method: string, params: unknown): Promise<void> {
    const handler = this.handlers.get(method);
    if (!handler) {
      await this.#send({
        jsonrpc: "2.0",
        id,
        error: { code: -32601, message: `Method not found: ${method}` },
      });
      return;
    }
    try {
      await this.#send({ jsonrpc: "2.0", id, result: await handler(params, method) });
    } catch (error) {
      const answer = error instanceof RpcError
        ? {
          code: error.code,
          message: error.message,
          ...(error.data === undefined ? {} : { data: error.data }),
        }
        : { code: -32603, message: String(error) };
      await this.#send({ jsonrpc: "2.0", id, error: answer });
    }
  }

  /**
   * Resolves once every answer to an agent-to-client request received so far has been sent
   * (its handler settled and the answer frame handed to the stream).
   */
  async answersSent(): Promise<void> {
    await Promise.all(this.#answering);
  }

  /** Sends a request and resolves with its whole response frame. */
  requestRaw(method: string, params?: unknown, id?: string | number): Promise<Frame> {
    const requestId = id ?? this.#nextId++;
    this.#sentMethods.set(requestId, method);
    const response = new Promise<Frame>((resolve) =>
      this.#pending.set(requestId, { method, resolve })
    );
    void this.#send({ jsonrpc: "2.0", id: requestId, method, params });
    return response;
  }

  /** Sends a request; resolves with its result or rejects with {@link RpcError}. */
  async request<T = Record<string, unknown>>(method: string, params?: unknown): Promise<T> {
    const frame = await this.requestRaw(method, params);
    if ("error" in frame) throw new RpcError(frame.error as { code: number; message: string });
    return frame.result as T;
  }

  /** Sends a notification. */
  notify(method: string, params?: unknown): Promise<void> {
    return this.#send({ jsonrpc: "2.0", method, params });
  }

  /** Sends any frame as is. */
  sendRaw(message: unknown): Promise<void> {
    return this.#send(message);
  }

  /** The next request id {@link request} will use. */
  get nextId(): number {
    return this.#nextId;
  }

  /** `session/update` params received, optionally for one session. */
  updates(sessionId?: string): Array<{ sessionId: string; update: Record<string, unknown> }> {
    return this.frames
      .filter((frame) => frame.method === "session/update")
      .map((frame) => frame.params as { sessionId: string; update: Record<string, unknown> })
      .filter((params) => sessionId === undefined || params.sessionId === sessionId);
  }

  /** Resolves once `predicate` holds for the frames received (checked on every frame). */
  waitFor(predicate: (frames: readonly Frame[]) => boolean, timeoutMs = 10_000): Promise<void> {
    if (predicate(this.frames)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(check);
        reject(new Error(`waitFor timed out after ${timeoutMs} ms`));
      }, timeoutMs);
      const check = (): void => {
        if (!predicate(this.frames)) return;
        clearTimeout(timer);
        this.#waiters.delete(check);
        resolve();
      };
      this.#waiters.add(check);
    });
  }

  /**
   * Resolves once a `session/update` of kind `sessionUpdate` arrived for `sessionId`. The first
   * prompt of a new session sends `session_info_update` (its title) once the prompt is admitted
   * and its turn has begun: the event to wait for before cancelling a running turn.
   */
  waitForUpdate(sessionId: string, sessionUpdate: string, timeoutMs?: number): Promise<void> {
    return this.waitFor(
      () => this.updates(sessionId).some(({ update }) => update.sessionUpdate === sessionUpdate),
      timeoutMs,
    );
  }

  /** Standard handshake; returns the initialize result. */
  initialize(capabilities: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return this.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: capabilities,
      clientInfo: { name: "acp-harness-tests", version: "0" },
    });
  }

  /** Opens a session in `cwd`; returns its id. */
  async newSession(cwd: string, extra: Record<string, unknown> = {}): Promise<string> {
    const result = await this.request<{ sessionId: string }>("session/new", {
      cwd,
      mcpServers: [],
      ...extra,
    });
    return result.sessionId;
  }

  /** Sends a text prompt; resolves with the stop reason. */
  async prompt(sessionId: string, text: string): Promise<string> {
    const result = await this.request<{ stopReason: string }>("session/prompt", {
      sessionId,
      prompt: [{ type: "text", text }],
    });
    return result.stopReason;
  }
}

/** Connects a test client to the client end of an in-memory pair. */
export function memoryClient(stream: Stream): AcpTestClient {
  const writer = stream.writable.getWriter();
  const client = new AcpTestClient((message) => writer.write(message as AnyMessage));
  void (async () => {
    for await (const frame of stream.readable) client.receive(frame as Frame);
  })().catch(() => {});
  (client as { close?: () => Promise<void> }).close = () => writer.close();
  return client;
}

/** A server child process with a test client on its stdio. */
export interface StdioAgent {
  readonly child: ChildProcess;
  readonly client: AcpTestClient;
  /** Non-JSON lines seen on stdout (must stay empty: stdout carries frames only). */
  readonly impure: string[];
  /** Everything written to stderr. */
  stderr(): string;
  /** Writes raw text to stdin. */
  writeRaw(text: string): Promise<void>;
  /** Closes stdin. */
  end(): void;
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
}

/** Spawns a server and connects a test client to its stdio. */
export function spawnAgent(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
): StdioAgent {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], ...options });
  const impure: string[] = [];
  let stderr = "";
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (text: string) => stderr += text);
  const writeRaw = (text: string): Promise<void> =>
    new Promise((resolve) => {
      if (!child.stdin || child.stdin.destroyed || child.stdin.writableEnded) return resolve();
      child.stdin.write(text, () => resolve());
    });
  const client = new AcpTestClient((message) => writeRaw(JSON.stringify(message) + "\n"));
  let buffer = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (text: string) => {
    buffer += text;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (line.trim() === "") continue;
      try {
        client.receive(JSON.parse(line));
      } catch {
        impure.push(line);
      }
    }
  });
  child.stdin?.on("error", () => {});
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal }))
  );
  return {
    child,
    client,
    impure,
    stderr: () => stderr,
    writeRaw,
    end: () => child.stdin?.end(),
    exited,
  };
}

/**
 * Waits for an agent to exit, killing it and failing if that takes over `ms` (a bound on a hung
 * process, not a wait: it settles as soon as the process exits).
 *
 * @param agent The agent
 * @param ms The bound
 * @returns Its exit code
 */
export async function exitWithin(agent: StdioAgent, ms: number): Promise<number | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      agent.child.kill("SIGKILL");
      reject(new Error(`the process did not exit within ${ms} ms:\n${agent.stderr()}`));
    }, ms);
  });
  try {
    return (await Promise.race([agent.exited, timeout])).code;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits for the `listening on <url>` line a `serve --http` process writes on stderr.
 *
 * @param agent The server process
 * @returns The URL it listens on
 * @throws {Error} When it exits first (with its stderr)
 */
export function listeningUrl(agent: StdioAgent): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const check = (): void => {
      const match = /listening on (http:\/\/\S+)/.exec(agent.stderr());
      if (match) {
        agent.child.stderr?.off("data", check);
        resolve(match[1]!);
      }
    };
    agent.child.stderr?.on("data", check);
    check();
    void agent.exited.then(({ code }) =>
      reject(new Error(`exited with ${code} before listening:\n${agent.stderr()}`))
    );
  });
}
