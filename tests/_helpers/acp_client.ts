/**
 * The kit's one NDJSON JSON-RPC client, for tests, the torture suite and the bench: it drives
 * the server in memory or over a child's stdio, records every inbound frame and checks each
 * against the ACP schema. Beside the request/answer helpers it can build frames to send raw
 * (several in one write, malformed ones), wait for the answer to any id, and say which requests
 * are still unanswered.
 *
 * @module
 */
import { type ChildProcess, spawn, type SpawnOptions } from "node:child_process";
import type { AnyMessage, Stream } from "../../mod.ts";
import { schemaProblems } from "./acp_schema.ts";
import { Waiters } from "./waiters.ts";

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
/** A JSON-RPC frame as parsed from one line. */
export type Frame = Record<string, unknown>;

/** Options for {@link AcpTestClient}. */
export interface AcpTestClientOptions {
  /**
   * Whether inbound frames are checked against the ACP schema (into
   * {@link AcpTestClient.problems}); off for floods where the check would cost the run.
   *
   * @default {true}
   */
  readonly checkSchema?: boolean;
  /**
   * The first request id: far from the ids a test's hand-made frames use, so that their
   * answers are never taken for the client's.
   *
   * @default {0}
   */
  readonly firstId?: number;
}

/** Drives an agent over JSON-RPC frames. */
export class AcpTestClient {
  /** Every inbound frame, in order. */
  readonly frames: Frame[] = [];
  /** Schema problems found in inbound frames. */
  readonly problems: string[] = [];
  /** Agent-to-client request handlers by method. */
  readonly handlers = new Map<string, Handler>();
  /**
   * Sees each agent-to-client request before {@link handlers}; returns true when it answered
   * the request itself (e.g. with a raw, malformed answer), false to leave it to the handlers.
   */
  onRequest: ((frame: Frame) => boolean) | undefined;
  readonly #send: (message: unknown) => Promise<void>;
  readonly #checkSchema: boolean;
  readonly #open = new Set<string | number>();
  readonly #pending = new Map<
    string | number,
    { method: string; resolve: (frame: Frame) => void }
  >();
  /** Set once the agent is gone: every pending and later request is answered with it. */
  #gone: { code: number; message: string; data: { gone: true } } | undefined;
  readonly #sentMethods = new Map<string | number, string>();
  readonly #waiters = new Waiters();
  readonly #answering = new Set<Promise<void>>();
  #nextId: number;

  /**
   * @param send Writes one frame to the agent
   * @param options Schema checks and the first id
   */
  constructor(send: (message: unknown) => Promise<void>, options: AcpTestClientOptions = {}) {
    this.#send = send;
    this.#checkSchema = options.checkSchema ?? true;
    this.#nextId = options.firstId ?? 0;
  }

  /**
   * Feeds one inbound frame.
   *
   * @param frame The frame
   * @param wake Whether to re-check the waiters now; a reader that feeds many frames at once
   *   may pass false and call {@link wake} after the last
   */
  receive(frame: Frame, wake = true): void {
    this.frames.push(frame);
    const id = frame.id as string | number | null | undefined;
    const method = typeof frame.method === "string" ? frame.method : undefined;
    const answered = method === undefined && id !== undefined && id !== null
      ? this.#sentMethods.get(id)
      : undefined;
    if (this.#checkSchema) this.#check(frame, answered);
    if (method !== undefined && id !== undefined) {
      if (this.onRequest?.(frame) === true) {
        if (wake) this.wake();
        return;
      }
      const answering = this.#answer(id as string | number, method, frame.params);
      this.#answering.add(answering);
      void answering.finally(() => this.#answering.delete(answering));
    } else if (method === undefined && id !== undefined && id !== null) {
      if ("result" in frame || "error" in frame) this.#open.delete(id);
      const pending = this.#pending.get(id);
      this.#pending.delete(id);
      pending?.resolve(frame);
    }
    if (wake) this.wake();
  }

  /**
   * Tells the client the agent is gone (it exited): every request still waiting for an answer,
   * and every later one, resolves with an error frame made here (code -32099, `data.gone`; not
   * in {@link frames}, and the request stays {@link unanswered}) instead of waiting forever, so
   * {@link request} rejects with why.
   *
   * @param message Why (the exit code and the agent's stderr)
   */
  gone(message: string): void {
    const error = this.#gone ??= { code: -32099, message, data: { gone: true } };
    const pending = [...this.#pending.entries()];
    this.#pending.clear();
    for (const [id, { resolve }] of pending) resolve({ jsonrpc: "2.0", id, error });
    this.wake();
  }

  /** Re-checks every waiter: after a batch of frames, or an event that is no frame (an exit). */
  wake(): void {
    this.#waiters.wake();
  }

  #check(frame: Frame, answered: string | undefined): void {
    let problems: string[];
    try {
      problems = schemaProblems(frame, answered);
    } catch (error) {
      problems = [String(error)];
    }
    for (const problem of problems) {
      this.problems.push(`${JSON.stringify(frame).slice(0, 200)}: ${problem}`);
    }
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
    this.#open.add(requestId);
    if (this.#gone) return Promise.resolve({ jsonrpc: "2.0", id: requestId, error: this.#gone });
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

  /**
   * A request frame with a fresh id, not sent: for a caller that writes it raw (alone, or with
   * others in one write). Its answer counts for {@link unanswered} and the schema check.
   *
   * @param method The method
   * @param params Its params; left out of the frame when undefined
   * @returns The id and the frame
   */
  nextRequest(method: string, params?: unknown): { id: number; frame: Frame } {
    const id = this.#nextId++;
    this.#sentMethods.set(id, method);
    this.#open.add(id);
    return {
      id,
      frame: { jsonrpc: "2.0", id, method, ...(params === undefined ? {} : { params }) },
    };
  }

  /** A notification frame, not sent. */
  notification(method: string, params?: unknown): Frame {
    return { jsonrpc: "2.0", method, params };
  }

  /** The ids of the requests sent (by {@link requestRaw} or {@link nextRequest}) not yet answered. */
  unanswered(): Array<string | number> {
    return [...this.#open];
  }

  /** The index in {@link frames} of the response to `id`, or -1. */
  responseIndex(id: number | string): number {
    return this.frames.findIndex((frame) =>
      frame.id === id && frame.method === undefined && ("result" in frame || "error" in frame)
    );
  }

  /**
   * Waits for the response to `id`, however it was sent.
   *
   * @param id The request id
   * @param timeoutMs How long to wait
   * @param giveUp Ends the wait early when it holds (e.g. the agent exited)
   * @returns The response frame; undefined on timeout or give-up
   */
  async response(
    id: number | string,
    timeoutMs = 30_000,
    giveUp?: () => boolean,
  ): Promise<Frame | undefined> {
    const ok = await this.waitUntil(() => this.responseIndex(id) !== -1, timeoutMs, giveUp);
    return ok ? this.frames[this.responseIndex(id)] : undefined;
  }

  /**
   * Resolves true once `predicate` holds (checked on every frame and {@link wake}), false when
   * `timeoutMs` passed or `giveUp` held first.
   *
   * @param predicate What to wait for
   * @param timeoutMs How long to wait
   * @param giveUp Ends the wait early, false, when it holds and `predicate` does not
   * @returns Whether `predicate` held
   */
  waitUntil(
    predicate: () => boolean,
    timeoutMs = 30_000,
    giveUp?: () => boolean,
  ): Promise<boolean> {
    return this.#waiters.until(predicate, timeoutMs, giveUp);
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
  async waitFor(
    predicate: (frames: readonly Frame[]) => boolean,
    timeoutMs = 10_000,
  ): Promise<void> {
    if (!await this.waitUntil(() => predicate(this.frames), timeoutMs)) {
      throw new Error(`waitFor timed out after ${timeoutMs} ms`);
    }
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
  /** Every non-empty stdout line, in order, as read. */
  readonly lines: string[];
  /**
   * Lines seen on stdout that are not a JSON object (must stay empty: stdout carries frames
   * only).
   */
  readonly impure: string[];
  /** Everything written to stderr. */
  stderr(): string;
  /** Writes raw text to stdin. */
  writeRaw(text: string): Promise<void>;
  /** Closes stdin. */
  end(): void;
  /** Resolves with the exit code and signal. */
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** The exit code and signal once it exited (set before {@link exited} resolves). */
  readonly exit: { code: number | null; signal: string | null } | undefined;
}

/** Options of {@link spawnAgent} beyond the process's own. */
export interface SpawnAgentOptions {
  /** The client's options. */
  readonly client?: AcpTestClientOptions;
  /** How much of stderr is kept, in characters. @default {Infinity} */
  readonly stderrLimit?: number;
  /**
   * Re-check the client's waiters once per stdout read instead of once per frame: cheaper
   * under a flood, for waits whose condition stays true once it holds.
   *
   * @default {false}
   */
  readonly wakePerRead?: boolean;
}

/** Parses one stdout line: a JSON object, or undefined for anything else. */
function parseFrame(line: string): Frame | undefined {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === "object" && !Array.isArray(value)
      ? value as Frame
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Spawns a server and connects a test client to its stdio.
 *
 * @param command The program
 * @param args Its arguments
 * @param options The process's options (`cwd`, `env`, …)
 * @param kit The client's options, the stderr bound, how often waiters are re-checked
 * @returns The process with its client; waiters are re-checked on stderr output and the exit too
 */
export function spawnAgent(
  command: string,
  args: readonly string[],
  options: SpawnOptions = {},
  kit: SpawnAgentOptions = {},
): StdioAgent {
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "pipe"], ...options });
  const lines: string[] = [];
  const impure: string[] = [];
  const stderrLimit = kit.stderrLimit ?? Infinity;
  const perFrame = kit.wakePerRead !== true;
  let stderr = "";
  let exit: { code: number | null; signal: string | null } | undefined;
  const writeRaw = (text: string): Promise<void> =>
    new Promise((resolve) => {
      if (!child.stdin || child.stdin.destroyed || child.stdin.writableEnded) return resolve();
      child.stdin.write(text, () => resolve());
    });
  const client = new AcpTestClient(
    (message) => writeRaw(JSON.stringify(message) + "\n"),
    kit.client,
  );
  child.stderr?.setEncoding("utf8");
  child.stderr?.on("data", (text: string) => {
    if (stderr.length < stderrLimit) stderr += text;
    client.wake();
  });
  let buffer = "";
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (text: string) => {
    buffer += text;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (line.trim() === "") continue;
      lines.push(line);
      const frame = parseFrame(line);
      if (frame === undefined) impure.push(line);
      else client.receive(frame, perFrame);
    }
    if (!perFrame) client.wake();
  });
  child.stdin?.on("error", () => {});
  // Once it exited and its stdout and stderr are read to the end, what was asked is not answered.
  child.on("close", (code, signal) =>
    client.gone(
      `the agent exited (${signal ?? `code ${code}`}) without answering` +
        (stderr ? `; its stderr:\n${stderr.slice(-2000)}` : ""),
    ));
  const exited = new Promise<{ code: number | null; signal: string | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      exit = { code, signal };
      client.wake();
      resolve(exit);
    })
  );
  return {
    child,
    client,
    lines,
    impure,
    stderr: () => stderr,
    writeRaw,
    end: () => child.stdin?.end(),
    exited,
    get exit() {
      return exit;
    },
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
