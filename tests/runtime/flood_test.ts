/**
 * Request floods on real server processes on Deno, Node.js and Bun: `session/list` sent as fast as
 * the client can over one WebSocket, over stdio and over the HTTP profiles. The server must live
 * through it with its memory bounded (its peak resident set, from `/proc/<pid>/status`, stays
 * within a generous bound of where it started) and keep serving other sessions and clients.
 *
 * @module
 */
import { createWebSocketStream } from "@agentclientprotocol/sdk/experimental/ws-client";
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { WebSocket as NodeWebSocket } from "ws";
import { listeningUrl, memoryClient, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

/** Requests in one flood: about 14 MB on the wire, as in issue 27. */
const FLOOD = 200_000;
/** Requests in one stdio flood (answered in full, so fewer). */
const STDIO_FLOOD = 60_000;
/** Requests a well-behaved client pipelines: all answered. */
const PIPELINED = 5_000;
/** How much the server's peak resident set may exceed its size before the flood. */
const MAX_GROWTH_KB = 200 * 1024;

/** A field of `/proc/<pid>/status` in kB (`VmRSS` now, `VmHWM` the peak so far). */
function memoryKb(pid: number, field: "VmRSS" | "VmHWM"): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
  if (!match) throw new Error(`Cannot read ${field} of ${pid}`);
  return Number(match[1]);
}

/**
 * Resets the peak resident set (`VmHWM`) to the current one, so that the peak read after the
 * flood is the flood's (`/proc/<pid>/clear_refs`, value 5).
 */
function resetPeak(pid: number): void {
  Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
}

const listLine = (id: number): string =>
  `{"jsonrpc":"2.0","id":${id},"method":"session/list","params":{}}`;

const INITIALIZE = JSON.stringify({
  jsonrpc: "2.0",
  id: "init",
  method: "initialize",
  params: { protocolVersion: 1, clientCapabilities: {} },
});

/** Starts `serve --http --port 0` and resolves with the URL it printed. */
async function startServe(
  runtime: (typeof RUNTIMES)[number],
  dirs: TempDirs,
): Promise<{ agent: StdioAgent; url: string }> {
  const data = await dirs.make();
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    "serve",
    "--http",
    "--port",
    "0",
    "--data-dir",
    data,
    "--log-level",
    "info",
  ]);
  const url = await listeningUrl(agent);
  return { agent, url };
}

/** How a flood over one WebSocket ended. */
interface FloodOutcome {
  /** Answers received. */
  readonly answers: number;
  /** The close code, when the server closed the socket. */
  readonly closeCode: number | undefined;
}

/**
 * Opens a WebSocket, initializes, sends `count` `session/list` requests without waiting, and
 * resolves once every one is answered or the socket is closed.
 */
function floodWebSocket(url: string, count: number): Promise<FloodOutcome> {
  return new Promise((resolve, reject) => {
    const socket = new NodeWebSocket(`${url.replace("http", "ws")}/acp`);
    let answers = 0;
    let initialized = false;
    socket.on("error", reject);
    socket.on("close", (code: number) => resolve({ answers, closeCode: code }));
    socket.on("open", () => socket.send(INITIALIZE));
    socket.on("message", (data: Uint8Array) => {
      const text = String(data);
      if (!initialized) {
        initialized = true;
        // As fast as the client can: every frame is queued at once.
        for (let id = 0; id < count; id++) socket.send(listLine(id));
        return;
      }
      if (!text.includes('"result"') && !text.includes('"error"')) return;
      if (++answers === count) {
        socket.close(1000);
      }
    });
  });
}

/** A WebSocket client of the ACP SDK that opens a session and prompts it. */
async function promptOverWebSocket(url: string, cwd: string): Promise<string> {
  const stream = createWebSocketStream(`${url.replace("http", "ws")}/acp`, {
    WebSocket: NodeWebSocket as never,
  });
  const client = memoryClient(stream);
  try {
    await client.initialize();
    const sessionId = await client.newSession(cwd);
    return await client.prompt(sessionId, "still serving?");
  } finally {
    await (client as unknown as { close(): Promise<void> }).close().catch(() => {});
  }
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: a WebSocket flood of session/list leaves the server alive, bounded and serving`, async () => {
    await using dirs = new TempDirs("acp-harness-flood-ws-");
    const cwd = await dirs.make();
    const { agent, url } = await startServe(runtime, dirs);
    const pid = agent.child.pid!;
    try {
      // Another client, before the flood: its session keeps working during and after it.
      assert.equal(await promptOverWebSocket(url, cwd), "end_turn");
      // A client that pipelines a few thousand requests gets every answer.
      const pipelined = await floodWebSocket(url, PIPELINED);
      assert.deepEqual(pipelined, { answers: PIPELINED, closeCode: 1000 });
      const before = memoryKb(pid, "VmRSS");
      resetPeak(pid);
      const [outcome, during] = await Promise.all([
        floodWebSocket(url, FLOOD),
        promptOverWebSocket(url, cwd),
      ]);
      const peak = memoryKb(pid, "VmHWM");
      assert.equal(agent.child.exitCode, null, `the server exited:\n${agent.stderr()}`);
      assert.ok(
        peak - before < MAX_GROWTH_KB,
        `the server grew from ${before} to ${peak} kB (${outcome.answers} answers)`,
      );
      // Either every request was answered, or the server closed the socket for its policy (1008;
      // Deno closes the TCP connection with the client's frames unread, which the client sees as
      // a reset: 1006) and said so.
      assert.ok(
        outcome.answers === FLOOD ||
          /Closing ACP connection .*maxBufferedBytes/.test(agent.stderr()),
        `${outcome.answers} answers, close code ${outcome.closeCode}:\n${agent.stderr()}`,
      );
      assert.equal(during, "end_turn");
      assert.equal(await promptOverWebSocket(url, cwd), "end_turn");
      const health = await fetch(`${url}/health`);
      assert.equal(await health.text(), "ok");
    } finally {
      agent.child.kill("SIGTERM");
      await agent.exited;
    }
  });

  Deno.test(`${runtime.name}: a stdio flood of session/list is answered in full with bounded memory`, async () => {
    await using dirs = new TempDirs("acp-harness-flood-stdio-");
    const cwd = await dirs.make();
    const data = await dirs.make();
    const child = spawn(runtime.command, [...runtime.args, "--data-dir", data], {
      stdio: ["pipe", "pipe", "pipe"],
    });
    const lines = stdoutLines(child);
    try {
      const send = (text: string): Promise<void> => writeWithBackpressure(child, text);
      await send(INITIALIZE + "\n");
      await lines.next((line) => line.includes('"id":"init"'));
      await send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: "new",
          method: "session/new",
          params: { cwd, mcpServers: [] },
        }) + "\n",
      );
      const created = await lines.next((line) => line.includes('"id":"new"'));
      const sessionId = (JSON.parse(created) as { result: { sessionId: string } }).result.sessionId;
      const pid = child.pid!;
      const before = memoryKb(pid, "VmRSS");
      resetPeak(pid);
      let answers = 0;
      lines.onLine = (line) => {
        if (line.startsWith('{"jsonrpc":"2.0","id":') && !line.includes('"id":"')) answers++;
      };
      const chunk = 2_000;
      for (let id = 0; id < STDIO_FLOOD; id += chunk) {
        const ids = Array.from({ length: Math.min(chunk, STDIO_FLOOD - id) }, (_, at) => id + at);
        await send(ids.map(listLine).join("\n") + "\n");
      }
      await lines.next(() => answers >= STDIO_FLOOD);
      const peak = memoryKb(pid, "VmHWM");
      assert.ok(peak - before < MAX_GROWTH_KB, `the server grew from ${before} to ${peak} kB`);
      // The session opened before the flood still prompts.
      await send(
        JSON.stringify({
          jsonrpc: "2.0",
          id: "prompt",
          method: "session/prompt",
          params: { sessionId, prompt: [{ type: "text", text: "still there?" }] },
        }) + "\n",
      );
      const answer = await lines.next((line) => line.includes('"id":"prompt"'));
      assert.match(answer, /"stopReason":"end_turn"/);
    } finally {
      child.stdin?.end();
      await new Promise((resolve) =>
        child.exitCode === null ? child.on("exit", resolve) : resolve(0)
      );
    }
  });
}

/** Writes to a child's stdin, waiting for `drain` when its buffer is full. */
function writeWithBackpressure(child: ChildProcess, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const stdin = child.stdin;
    if (!stdin || stdin.destroyed) return reject(new Error("stdin is closed"));
    if (stdin.write(text)) resolve();
    else stdin.once("drain", () => resolve());
  });
}

/** The lines a child writes to stdout, with a wait for the first that matches. */
function stdoutLines(child: ChildProcess): {
  next(match: (line: string) => boolean): Promise<string>;
  onLine: (line: string) => void;
} {
  let buffer = "";
  const waiters = new Set<(line: string) => void>();
  const result = {
    onLine: (_line: string): void => {},
    next(match: (line: string) => boolean): Promise<string> {
      return new Promise<string>((resolve, reject) => {
        const waiter = (line: string): void => {
          if (!match(line)) return;
          waiters.delete(waiter);
          resolve(line);
        };
        waiters.add(waiter);
        child.once("exit", (code) => reject(new Error(`the server exited with ${code}`)));
      });
    },
  };
  child.stdout?.setEncoding("utf8");
  child.stdout?.on("data", (text: string) => {
    buffer += text;
    let newline: number;
    while ((newline = buffer.indexOf("\n")) !== -1) {
      const line = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      result.onLine(line);
      for (const waiter of [...waiters]) waiter(line);
    }
  });
  child.stderr?.resume();
  return result;
}
