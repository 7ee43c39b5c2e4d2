/**
 * `session/load` of a large log over real stdio on every runtime: the replay streams while the
 * log is read (written as NDJSON bytes), and must give exactly what the in-memory transport gives
 * (updates built as objects), all before the answer.
 *
 * @module
 */
import assert from "node:assert/strict";
import { appendFile, mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { NodeHost } from "../../src/host/node_host.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { replayUpdates } from "../../src/session/replay.ts";
import { restoreSession } from "../../src/session/restore.ts";
import { FIRST_READ_BYTES, READ_BYTES } from "../../src/store/_log_reader.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import { RpcError, spawnAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { startServer } from "../_helpers/server.ts";
import { type TempDir, tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

type Update = Record<string, unknown>;

/** A conversation of `turns` turns with tool calls, the last one interrupted. */
function conversation(turns: number): StoredEvent[] {
  const events: StoredEvent[] = [{ type: "config", model: "echo", mode: "ask" }];
  const prose = (n: number): string =>
    `${n}: the parser returns a “config” value when the index reads the log\n`.repeat(6);
  for (let turn = 0; turn < turns; turn++) {
    const call = `call_${turn}`;
    events.push(
      { type: "turn_start" },
      { type: "user", messageId: `u${turn}`, content: [{ type: "text", text: prose(turn) }] },
      ...(turn === 0 ? [{ type: "title" as const, title: "Streaming" }] : []),
      {
        type: "assistant",
        messageId: `a${turn}`,
        thoughtId: `t${turn}`,
        text: prose(turn + 1),
        reasoning: prose(turn + 2),
        toolCalls: [{ id: call, name: "read_file", arguments: `{"path":"f${turn}.ts"}` }],
      },
      { type: "usage", usage: { input: turn, output: 1 }, used: turn + 1, size: 128_000 },
      {
        type: "tool_call",
        toolCallId: call,
        name: "read_file",
        title: `Read f${turn}.ts`,
        kind: "read",
        rawInput: { path: `f${turn}.ts`, line: -turn, big: 1e21 },
        locations: [{ path: `/w/f${turn}.ts`, line: turn }],
      },
    );
    if (turn === turns - 1) break;
    events.push(
      {
        type: "tool_result",
        toolCallId: call,
        name: "read_file",
        content: prose(turn + 3),
        isError: turn % 5 === 0,
        locations: [{ path: `/w/f${turn}.ts` }],
      },
      { type: "assistant", messageId: `b${turn}`, text: "Done." },
      { type: "turn_end", stopReason: "end_turn" },
    );
  }
  return events;
}

interface Fixture extends AsyncDisposable {
  readonly cwd: string;
  readonly dataDir: string;
  /** Sessions: a clean one, one with a corrupt middle line, one with a torn tail. */
  readonly ids: { readonly clean: string; readonly corrupt: string; readonly torn: string };
  readonly log: (id: string) => string;
  /** What the clean session replays, computed in this process. */
  readonly expected: Update[];
  /** The 1-based line of the corrupt session's bad line. */
  readonly badLine: number;
}

const TORN_TAIL = '{"type":"assistant","text":"cut o';

async function fixture(): Promise<Fixture> {
  const dir = await tempDir("acp-harness-load-");
  try {
    return await write(dir);
  } catch (error) {
    await dir[Symbol.asyncDispose]();
    throw error;
  }
}

async function write(dir: TempDir): Promise<Fixture> {
  const cwd = join(dir.path, "ws");
  const dataDir = join(dir.path, "data");
  await mkdir(cwd);
  const store = new JsonlSessionStore({ host: new NodeHost(), dataDir });
  const events = conversation(1_200);
  const ids = {
    clean: crypto.randomUUID(),
    corrupt: crypto.randomUUID(),
    torn: crypto.randomUUID(),
  };
  for (const id of Object.values(ids)) {
    const lease = await store.acquire(id);
    await store.create({
      version: 1,
      id,
      cwd,
      additionalDirectories: [],
      createdAt: new Date().toISOString(),
    });
    for (let start = 0; start < events.length; start += 1_000) {
      await store.append(id, events.slice(start, start + 1_000), { sync: false });
    }
    await lease.release();
  }
  const log = (id: string): string => join(dataDir, "sessions", `${id}.jsonl`);
  const size = (await readFile(log(ids.clean))).byteLength;
  assert.ok(size > FIRST_READ_BYTES + READ_BYTES, `the log (${size} bytes) spans several reads`);
  const lines = (await readFile(log(ids.corrupt), "utf8")).split("\n");
  const badLine = Math.floor(lines.length * 0.8);
  lines[badLine - 1] = "{not json";
  await writeFile(log(ids.corrupt), lines.join("\n"));
  const loaded = await store.load(ids.clean);
  assert.ok(loaded);
  const restored = await restoreSession(loaded, store.attachments, nullLogger);
  const expected = await replayUpdates(
    [...loaded.records, ...restored.repair],
    store.attachments,
    nullLogger,
    ids.clean,
  ) as unknown as Update[];
  return {
    cwd,
    dataDir,
    ids,
    log,
    expected,
    badLine,
    [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose](),
  };
}

/** Fails naming the first update that differs (a diff of thousands of updates takes ages). */
function sameUpdates(actual: readonly Update[], expected: readonly Update[], what: string): void {
  assert.equal(actual.length, expected.length, `${what}: number of updates`);
  actual.forEach((update, index) =>
    assert.deepEqual(update, expected[index], `${what}: update ${index}`)
  );
}

/** The updates of a session among some frames, and whether they all precede frame `answer`. */
function replayed(
  frames: readonly Record<string, unknown>[],
  sessionId: string,
): { updates: Update[]; lastAt: number } {
  const updates: Update[] = [];
  let lastAt = -1;
  frames.forEach((frame, index) => {
    const params = frame.params as { sessionId?: string; update?: Update } | undefined;
    if (frame.method !== "session/update" || params?.sessionId !== sessionId) return;
    // The slash commands follow the answer: not part of the replay.
    if (params.update?.sessionUpdate === "available_commands_update") return;
    updates.push(params.update as Update);
    lastAt = index;
  });
  return { updates, lastAt };
}

Deno.test("session/load streams a large log on every runtime: all of it, in order, before the answer", async () => {
  await using f = await fixture();
  const { cwd, ids } = f;
  const params = (sessionId: string) => ({ sessionId, cwd, mcpServers: [] });

  // In memory: updates as objects (no NDJSON framing).
  const memory = startServer({ dataDir: f.dataDir });
  await memory.client.initialize();
  await memory.client.request("session/load", params(ids.clean));
  sameUpdates(memory.client.updates(ids.clean).map(({ update }) => update), f.expected, "memory");
  await memory.client.request("session/close", { sessionId: ids.clean });
  await memory.disconnect();

  for (const runtime of RUNTIMES) {
    const agent = spawnAgent(runtime.command, [...runtime.args, "--data-dir", f.dataDir], { cwd });
    try {
      await agent.client.initialize();
      const before = agent.client.frames.length;
      await agent.client.request("session/load", params(ids.clean));
      const answerAt = agent.client.frames.findLastIndex((frame) => "result" in frame);
      const { updates, lastAt } = replayed(agent.client.frames.slice(before), ids.clean);
      sameUpdates(updates, f.expected, runtime.name);
      assert.ok(before + lastAt < answerAt, `${runtime.name}: every update precedes the answer`);

      // A corrupt line before the end fails the load as it did before streaming.
      const failure = await agent.client.request("session/load", params(ids.corrupt)).then(
        () => undefined,
        (error: unknown) => error,
      );
      assert.ok(failure instanceof RpcError, runtime.name);
      assert.equal(failure.code, -32603);
      assert.match(
        String((failure.data as { details?: unknown }).details),
        new RegExp(`line ${f.badLine} is not valid JSON`),
      );
      // The session was not opened: it loads again (and fails again), nothing else changed.
      await assert.rejects(agent.client.request("session/load", params(ids.corrupt)), RpcError);

      // A torn tail is ignored and cut.
      await appendFile(f.log(ids.torn), TORN_TAIL);
      await agent.client.request("session/load", params(ids.torn));
      const torn = replayed(agent.client.frames, ids.torn).updates;
      sameUpdates(torn, f.expected, `${runtime.name}, torn tail`);
      assert.ok(!(await readFile(f.log(ids.torn), "utf8")).includes(TORN_TAIL), runtime.name);
      await agent.client.request("session/close", { sessionId: ids.torn });
      assert.deepEqual(agent.client.problems, [], runtime.name);
      assert.deepEqual(agent.impure, [], runtime.name);
    } finally {
      agent.end();
      await agent.exited;
    }
  }
});

Deno.test("a client that stops reading during a replay does not hold up the server: on every runtime, a session it creates meanwhile is written", async () => {
  await using f = await fixture();
  const { cwd, ids } = f;
  const sessionsDir = join(f.dataDir, "sessions");
  for (const runtime of RUNTIMES) {
    const agent = spawnAgent(runtime.command, [...runtime.args, "--data-dir", f.dataDir], { cwd });
    try {
      await agent.client.initialize();
      const before = new Set(await readdir(sessionsDir));
      const loaded = agent.client.request("session/load", {
        sessionId: ids.clean,
        cwd,
        mcpServers: [],
      });
      // Once the replay (megabytes) is under way, the client stops reading: the pipe fills.
      await agent.client.waitFor(() => agent.client.updates(ids.clean).length > 0);
      agent.child.stdout?.pause();
      const created = agent.client.request<{ sessionId: string }>("session/new", {
        cwd,
        mcpServers: [],
      });
      // The new session's log is a file the server writes: no event of it reaches a client that
      // reads nothing, so poll for it.
      await pollUntil(
        async () => (await readdir(sessionsDir)).some((name) => !before.has(name)),
        { what: `${runtime.name}: the new session's log, written while stdout is full` },
      );
      agent.child.stdout?.resume();
      await loaded;
      const { sessionId } = await created;
      assert.ok(!before.has(`${sessionId}.jsonl`), runtime.name);
      sameUpdates(replayed(agent.client.frames, ids.clean).updates, f.expected, runtime.name);
      await agent.client.request("session/close", { sessionId: ids.clean });
      await agent.client.request("session/delete", { sessionId });
      assert.deepEqual(agent.client.problems, [], runtime.name);
    } finally {
      // Reading again lets a server stuck on a full pipe finish its writes and exit.
      agent.child.stdout?.resume();
      agent.end();
      await agent.exited;
    }
  }
});
