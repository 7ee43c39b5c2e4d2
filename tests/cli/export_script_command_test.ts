/**
 * `acp-harness export-script`: how a session's records map to scripted-model steps (texts,
 * thoughts, tool calls, usage, finish reasons, compactions, failed turns, several turns), that
 * the script parses and replays as the recorded requests streamed, the command against a JSONL
 * store (its output, an unknown id, `memory:`, a corrupt log), its command line, and that a
 * session with a `/compact` replays from its export in place.
 *
 * @module
 */
import assert from "node:assert/strict";
import { appendFile, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { NodeHost } from "../../mod.ts";
import {
  exportScriptCommand,
  type ExportScriptCommandOptions,
  ScriptExporter,
} from "../../src/cli/export_script_command.ts";
import { parseArgs } from "../../src/config/args.ts";
import { ConfigError, DEFAULT_CONFIG } from "../../src/config/config.ts";
import { USAGE } from "../../src/config/usage.ts";
import type { LlmEvent } from "../../src/llm/provider.ts";
import { parseScript, ScriptedProvider } from "../../src/llm/scripted.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import { startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const READ = { id: "call_read", name: "read_file", arguments: '{"path":"a.txt"}' };
const LIST = { id: "call_list", name: "list_directory", arguments: '{ "path": "." }' };

/** Three turns: tool calls, a max_tokens stop, a failure; every kind of record in between. */
const SESSION: readonly StoredEvent[] = [
  { type: "config", model: "fake/coder", mode: "auto" },
  { type: "turn_start" },
  { type: "user", messageId: "u1", content: [{ type: "text", text: "look around" }] },
  { type: "title", title: "look around" },
  {
    type: "assistant",
    messageId: "m1",
    thoughtId: "t1",
    text: "Looking.",
    reasoning: "Let me look.",
    toolCalls: [READ, LIST],
    providerState: { opaque: true },
    provider: "fake",
  },
  {
    type: "usage",
    usage: { input: 1000, output: 50, cacheRead: 600, cacheWrite: 7, reasoning: 20 },
    used: 1050,
    size: 32_000,
    cost: 0.001,
  },
  {
    type: "tool_call",
    toolCallId: "call_read",
    name: "read_file",
    title: "Read a.txt",
    kind: "read",
    rawInput: { path: "a.txt" },
    locations: [],
  },
  {
    type: "tool_call",
    toolCallId: "call_list",
    name: "list_directory",
    title: "List .",
    kind: "read",
    rawInput: { path: "." },
    locations: [],
  },
  { type: "tool_result", toolCallId: "call_read", name: "read_file", content: "a", isError: false },
  {
    type: "tool_result",
    toolCallId: "call_list",
    name: "list_directory",
    content: "a.txt",
    isError: false,
  },
  { type: "assistant", messageId: "m2", text: "a.txt says alpha." },
  { type: "usage", usage: { input: 1200, output: 10 }, used: 1210, size: 32_000 },
  { type: "turn_end", stopReason: "end_turn" },
  // A turn whose model ran out of output tokens, after a malformed tool call.
  { type: "turn_start" },
  { type: "user", messageId: "u2", content: [{ type: "text", text: "more" }] },
  {
    type: "assistant",
    text: "",
    toolCalls: [{ id: "call_bad", name: "read_file", arguments: '{"path": "a.tx' }],
  },
  { type: "usage", usage: { input: 1300, output: 5 }, used: 1305 },
  {
    type: "tool_result",
    toolCallId: "call_bad",
    name: "read_file",
    content: "bad arguments",
    isError: true,
  },
  { type: "assistant", messageId: "m3", text: "cut o" },
  { type: "usage", usage: { input: 1400, output: 4096 }, used: 5496 },
  { type: "turn_end", stopReason: "max_tokens" },
  // A turn that failed on its model request, after its retries.
  { type: "turn_start" },
  { type: "user", messageId: "u3", content: [{ type: "text", text: "again" }] },
  {
    type: "turn_end",
    stopReason: "error",
    error: "TurnError: Model request failed (fake/coder) (after 3 attempts): HTTP 500: overloaded",
  },
];

Deno.test("ScriptExporter maps each assistant record to a step: text, thought, tool calls with ids and arguments, the usage after it, finish reasons, over several turns", () => {
  const exporter = new ScriptExporter();
  // Read in batches, as a session/load reads a log.
  exporter.add(SESSION.slice(0, 5));
  exporter.add(SESSION.slice(5, 13));
  exporter.add(SESSION.slice(13));
  const exported = exporter.finish();
  assert.deepEqual(exported.steps, [
    {
      thought: "Let me look.",
      text: "Looking.",
      toolCalls: [
        { id: "call_read", name: "read_file", arguments: { path: "a.txt" } },
        { id: "call_list", name: "list_directory", arguments: { path: "." } },
      ],
      finish: "tool-calls",
      usage: { input: 1000, output: 50, cacheRead: 600, cacheWrite: 7, reasoning: 20 },
    },
    { text: "a.txt says alpha.", usage: { input: 1200, output: 10 } },
    {
      // Malformed arguments stay the text the model sent.
      toolCalls: [{ id: "call_bad", name: "read_file", arguments: '{"path": "a.tx' }],
      finish: "tool-calls",
      usage: { input: 1300, output: 5 },
    },
    { text: "cut o", usage: { input: 1400, output: 4096 }, finish: "max-tokens" },
    { error: { message: "HTTP 500: overloaded" } },
  ]);
  assert.equal(exported.thresholdCompactions, 0);
  assert.equal(exported.contextWindow, 32_000);
});

Deno.test("ScriptExporter: a refusal finishes the turn's last step; a budget's max_tokens (a note after it) does not; a turn that failed elsewhere adds no step", () => {
  const exporter = new ScriptExporter();
  exporter.add([
    { type: "turn_start" },
    { type: "assistant", text: "I will not." },
    { type: "turn_end", stopReason: "refusal" },
    { type: "turn_start" },
    { type: "assistant", text: "", toolCalls: [READ] },
    { type: "usage", usage: { input: 10, output: 1 }, used: 11 },
    {
      type: "tool_result",
      toolCallId: "call_read",
      name: "read_file",
      content: "a",
      isError: false,
    },
    { type: "note", messageId: "n1", text: "Budget reached: maxSessionTokens (10 tokens)…" },
    { type: "turn_end", stopReason: "max_tokens" },
    { type: "turn_start" },
    { type: "turn_end", stopReason: "error", error: "Error: the store is gone" },
    { type: "turn_start" },
    { type: "assistant", text: "partial" },
    { type: "turn_end", stopReason: "cancelled" },
  ]);
  assert.deepEqual(exporter.finish().steps, [
    { text: "I will not.", finish: "refusal" },
    {
      toolCalls: [{ id: "call_read", name: "read_file", arguments: { path: "a.txt" } }],
      finish: "tool-calls",
      usage: { input: 10, output: 1 },
    },
    { text: "partial" },
  ]);
});

Deno.test("ScriptExporter: a summarizing compaction is a step (its summary, its usage); a pruning one is none; an overflow one is preceded by a context-overflow error", () => {
  const exporter = new ScriptExporter();
  const compaction = {
    type: "compaction",
    compactionId: "c",
    tokensBefore: 900,
    tokensAfter: 100,
  } as const;
  exporter.add([
    { type: "turn_start" },
    { type: "assistant", text: "one" },
    { type: "usage", usage: { input: 900, output: 1 }, used: 901, size: 1000 },
    { ...compaction, reason: "threshold", replaced: 0, pruned: ["call_read"] },
    { type: "usage", usage: { input: 0, output: 0 }, used: 100, size: 1000 },
    { ...compaction, reason: "threshold", replaced: 2, summary: "The user said hi." },
    { type: "usage", usage: { input: 300, output: 20 }, used: 100, size: 1000 },
    { type: "assistant", text: "two" },
    { type: "usage", usage: { input: 150, output: 2 }, used: 152, size: 1000 },
    { type: "turn_end", stopReason: "end_turn" },
    { type: "turn_start" },
    { type: "command", messageId: "k", text: "/compact" },
    { ...compaction, reason: "command", replaced: 3, summary: "Still hi." },
    { type: "usage", usage: { input: 200, output: 10 }, used: 60, size: 1000 },
    { type: "note", messageId: "n", text: "Compacted." },
    { type: "turn_end", stopReason: "end_turn" },
    { type: "turn_start" },
    { ...compaction, reason: "overflow", replaced: 4, summary: "Hi, again." },
    { type: "usage", usage: { input: 250, output: 12 }, used: 70, size: 1000 },
    { type: "assistant", text: "three" },
    { type: "turn_end", stopReason: "end_turn" },
  ]);
  const exported = exporter.finish();
  assert.deepEqual(exported.steps, [
    { text: "one", usage: { input: 900, output: 1 } },
    { text: "The user said hi.", usage: { input: 300, output: 20 } },
    { text: "two", usage: { input: 150, output: 2 } },
    { text: "Still hi.", usage: { input: 200, output: 10 } },
    { error: { message: exported.steps[4]?.error?.message ?? "", kind: "context-overflow" } },
    { text: "Hi, again.", usage: { input: 250, output: 12 } },
    { text: "three" },
  ]);
  assert.equal(exported.thresholdCompactions, 2);
  assert.equal(exported.contextWindow, 1000);
});

/** What a provider streams for one request, its deltas joined. */
async function streamed(provider: ScriptedProvider): Promise<Record<string, unknown>> {
  const events: LlmEvent[] = [];
  const request = { sessionId: "s", model: "scripted", system: "", messages: [], tools: [] };
  for await (const event of provider.stream(request, { signal: new AbortController().signal })) {
    events.push(event);
  }
  return {
    thought: events.flatMap((e) => e.type === "reasoning-delta" ? [e.text] : []).join(""),
    text: events.flatMap((e) => e.type === "text-delta" ? [e.text] : []).join(""),
    calls: events.flatMap((e) =>
      e.type === "tool-call"
        ? [{ ...e.call, arguments: JSON.parse(e.call.arguments) as unknown }]
        : []
    ),
    usage: events.flatMap((e) => e.type === "usage" ? [e.usage] : []),
    finish: events.flatMap((e) => e.type === "finish" ? [e.reason] : []),
  };
}

Deno.test("the exported script parses, and the scripted model streams what the recorded requests did", async () => {
  const exporter = new ScriptExporter();
  exporter.add(SESSION.slice(0, 13));
  const json: unknown = JSON.parse(JSON.stringify(exporter.finish().steps));
  const provider = new ScriptedProvider(parseScript(json, "exported.json"));
  assert.deepEqual(await streamed(provider), {
    thought: "Let me look.",
    text: "Looking.",
    calls: [
      { id: "call_read", name: "read_file", arguments: { path: "a.txt" } },
      { id: "call_list", name: "list_directory", arguments: { path: "." } },
    ],
    usage: [{ input: 1000, output: 50, cacheRead: 600, cacheWrite: 7, reasoning: 20 }],
    finish: ["tool-calls"],
  });
  assert.deepEqual(await streamed(provider), {
    thought: "",
    text: "a.txt says alpha.",
    calls: [],
    usage: [{ input: 1200, output: 10 }],
    finish: ["stop"],
  });
});

/** A JSONL data directory holding {@link SESSION}, and the command's options on it. */
async function seeded(dataDir: string): Promise<{
  readonly id: string;
  readonly run: (sessionId: string, location?: string) => Promise<{
    code: number;
    stdout: string;
    stderr: string;
  }>;
}> {
  const host = new NodeHost({});
  const store = new JsonlSessionStore({ host, dataDir });
  const id = crypto.randomUUID();
  const lease = await store.acquire(id);
  await store.create({
    version: 1,
    id,
    cwd: "/work",
    additionalDirectories: [],
    createdAt: new Date().toISOString(),
  });
  await store.append(id, SESSION, { sync: true });
  await lease.release();
  const run = async (sessionId: string, location = dataDir) => {
    let stdout = "";
    let stderr = "";
    const options: ExportScriptCommandOptions = {
      platform: {
        host,
        stdout: new WritableStream<Uint8Array>({
          write: (bytes) => void (stdout += new TextDecoder().decode(bytes)),
        }),
        writeStderr: (text) => void (stderr += text),
      },
      config: DEFAULT_CONFIG,
      logger: nullLogger,
      location,
      sessionId,
    };
    const code = await exportScriptCommand(options);
    return { code, stdout, stderr };
  };
  return { id, run };
}

Deno.test("exportScriptCommand() prints the script as pretty JSON; an unknown id or memory: exits 2 naming it; a corrupt log exits 1", async () => {
  await using dir = await tempDir("acp-harness-export-");
  const { id, run } = await seeded(dir.path);
  const done = await run(id);
  assert.equal(done.code, 0, done.stderr);
  assert.equal(done.stderr, "");
  assert.ok(done.stdout.endsWith("]\n"));
  const steps = parseScript(JSON.parse(done.stdout)).steps;
  assert.equal(done.stdout, `${JSON.stringify(steps, null, 2)}\n`);
  assert.equal(steps.length, 5);

  const missing = await run("no-such-session");
  assert.equal(missing.code, 2);
  assert.equal(missing.stdout, "");
  assert.equal(
    missing.stderr,
    `acp-harness export-script: Cannot find session "no-such-session" in ${dir.path}\n`,
  );
  const invalid = await run("../etc");
  assert.equal(invalid.code, 2);
  assert.match(invalid.stderr, /^acp-harness export-script: .*"\.\.\/etc".*\n$/);
  const memory = await run(id, "memory:");
  assert.equal(memory.code, 2);
  assert.match(memory.stderr, /memory: keeps nothing/);

  await appendFile(join(dir.path, "sessions", `${id}.jsonl`), "not json\n{}\n");
  const corrupt = await run(id);
  assert.equal(corrupt.code, 1);
  assert.equal(corrupt.stdout, "");
  assert.match(corrupt.stderr, new RegExp(`Cannot read session "${id}": line \\d+ `));
});

Deno.test("exportScriptCommand() tells how to make threshold compactions recur", async () => {
  await using dir = await tempDir("acp-harness-export-");
  const host = new NodeHost({});
  const store = new JsonlSessionStore({ host, dataDir: dir.path });
  const id = crypto.randomUUID();
  const createdAt = new Date().toISOString();
  await store.create({ version: 1, id, cwd: "/work", additionalDirectories: [], createdAt });
  await store.append(id, [
    { type: "turn_start" },
    {
      type: "compaction",
      compactionId: "c",
      reason: "threshold",
      replaced: 2,
      summary: "s",
      tokensBefore: 900,
      tokensAfter: 10,
    },
    { type: "usage", usage: { input: 9, output: 1 }, used: 10, size: 1000 },
    { type: "turn_end", stopReason: "end_turn" },
  ], { sync: true });
  let stderr = "";
  const code = await exportScriptCommand({
    platform: { host, stdout: new WritableStream(), writeStderr: (text) => void (stderr += text) },
    config: DEFAULT_CONFIG,
    logger: nullLogger,
    location: dir.path,
    sessionId: id,
  });
  assert.equal(code, 0);
  assert.match(stderr, /compacted 1 time\(s\) at the context threshold/);
  assert.match(stderr, /"models": \{"scripted": \{"contextWindow": 1000\}\}/);
});

Deno.test("parseArgs() reads export-script SESSION_ID with the store flags; the id is required, once", () => {
  assert.deepEqual(parseArgs(["export-script", "abc", "--data-dir", "/d", "--store", "/s"]), {
    kind: "export-script",
    sessionId: "abc",
    overrides: { dataDir: "/d", store: "/s" },
  });
  assert.deepEqual(parseArgs(["export-script", "--config", "c.json", "abc"]), {
    kind: "export-script",
    sessionId: "abc",
    overrides: { configFile: "c.json" },
  });
  assert.throws(
    () => parseArgs(["export-script", "--data-dir", "/d"]),
    (error: unknown) =>
      error instanceof ConfigError && error.message.includes("needs a SESSION_ID"),
  );
  assert.throws(
    () => parseArgs(["export-script", "a", "b"]),
    (error: unknown) => error instanceof ConfigError && error.message.includes('"b"'),
  );
  assert.equal(parseArgs(["export-script", "--help"]).kind, "help");
  assert.match(USAGE, /acp-harness export-script SESSION_ID/);
  assert.match(USAGE, /^ {2}export-script SESSION_ID +Print a recorded session's/m);
});

/** Sends prompts to a fresh in-memory server on a JSONL store; what it did and recorded. */
async function compactingSession(
  script: unknown,
  cwd: string,
  dataDir: string,
): Promise<{ readonly flow: string[]; readonly records: readonly StoredEvent[] }> {
  const server = startServer({
    script,
    dataDir,
    config: { model: "scripted", mode: "auto", models: { scripted: { contextWindow: 4_000 } } },
  });
  await server.client.initialize();
  const sessionId = await server.client.newSession(cwd);
  for (const text of [`turn 1: ${"lorem ipsum ".repeat(166)}`, "turn 2", "/compact", "go on"]) {
    assert.equal(await server.client.prompt(sessionId, text), "end_turn");
  }
  await server.disconnect();
  const flow = server.client.updates(sessionId).flatMap(({ update }) => {
    const { sessionUpdate } = update;
    if (sessionUpdate === "agent_message_chunk" || sessionUpdate === "agent_thought_chunk") {
      return [`${sessionUpdate}: ${(update.content as { text: string }).text}`];
    }
    if (sessionUpdate === "tool_call_update" && update.status !== "in_progress") {
      return [`${update.toolCallId} ${update.status} ${JSON.stringify(update.content)}`];
    }
    return [];
  });
  const store = new JsonlSessionStore({ host: new NodeHost({}), dataDir });
  const loaded = await store.load(sessionId);
  return { flow, records: loaded?.records ?? [] };
}

Deno.test("a session with a /compact replays from its export: the summary request takes its step in place", async () => {
  await using dir = await tempDir("acp-harness-export-compact-");
  const cwd = join(dir.path, "ws");
  await mkdir(cwd);
  await writeFile(join(cwd, "a.txt"), "alpha\n");
  const original = [
    { text: "one", usage: { input: 900, output: 5 } },
    { text: "two", usage: { input: 950, output: 5 } },
    { text: "The user said lorem ipsum twice.", usage: { input: 600, output: 20 } },
    { toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }] },
    { thought: "It is alpha.", text: "a.txt says alpha." },
  ];
  const recorded = await compactingSession(original, cwd, join(dir.path, "recorded"));
  const compaction = recorded.records.find((record) => record.type === "compaction");
  assert.equal(compaction?.type === "compaction" ? compaction.reason : "", "command");
  const exporter = new ScriptExporter();
  exporter.add(recorded.records);
  const { steps } = exporter.finish();
  assert.deepEqual(steps[2], {
    text: "The user said lorem ipsum twice.",
    usage: { input: 600, output: 20 },
  });
  assert.equal(steps.length, original.length);

  const replayed = await compactingSession(
    JSON.parse(JSON.stringify(steps)),
    cwd,
    join(dir.path, "replayed"),
  );
  assert.deepEqual(replayed.flow, recorded.flow);
  assert.match(recorded.flow.join("\n"), /a\.txt says alpha/);
  const summaries = (records: readonly StoredEvent[]) =>
    records.flatMap((record) => record.type === "compaction" ? [record.summary] : []);
  assert.deepEqual(summaries(replayed.records), summaries(recorded.records));
});
