/**
 * The cost of compacting a long session: a server running the scripted model plays a 200-turn
 * session (each turn reads a file, then answers), then `/compact` compacts it. Reports the
 * `/compact` round trip beside an ordinary prompt's at the same history size, and the history
 * before and after (messages and estimated tokens, from the compaction's record in the log). The
 * summary is scripted, so the time is the server's own work: the transcript, the estimates, the
 * record and the updates, not a model's.
 *
 * @module
 */
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { McpBenchAgent } from "./mcp.ts";
import type { SessionUpdateParams } from "./rpc_client.ts";
import { median } from "./stats.ts";

/** What one runtime's compaction run measured. */
export interface CompactionResult {
  /** Turns played before `/compact`. */
  readonly turns: number;
  /** `/compact` request → answer, ms. */
  readonly compactMs: number;
  /** An ordinary prompt's round trip at the same history size, median ms. */
  readonly promptMs: number;
  /** Messages in the history before and after. */
  readonly messagesBefore: number;
  readonly messagesAfter: number;
  /** Estimated tokens in context before and after (the record's). */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** The session log's size after the run, bytes. */
  readonly logBytes: number;
  /** The model's context window in the run, tokens. */
  readonly window: number;
}

/** Starts ours with these extra arguments, its data directory at `home`. */
export type StartCompactionAgent = (args: readonly string[], home: string) => McpBenchAgent;

/** Bytes of the file each turn reads (its result stays in the history). */
const FILE_BYTES = 4_000;
/** Prompts timed at the end for the ordinary round trip. */
const REFERENCE_PROMPTS = 9;

/**
 * Plays the session and compacts it.
 *
 * @param start Starts ours
 * @param dir An empty directory for the workspace, script, config and data
 * @param turns Turns before `/compact`
 * @returns The figures
 */
export async function measureCompaction(
  start: StartCompactionAgent,
  dir: string,
  turns: number,
): Promise<CompactionResult> {
  const cwd = join(dir, "ws");
  const home = join(dir, "home");
  await mkdir(cwd, { recursive: true });
  await writeFile(join(cwd, "notes.txt"), `${"bench notes line\n".repeat(FILE_BYTES / 17)}`);
  const steps: unknown[] = [];
  for (let turn = 0; turn < turns; turn++) {
    steps.push(
      { toolCalls: [{ name: "read_file", arguments: { path: "notes.txt" } }] },
      { text: `Turn ${turn}: read the notes, nothing to change.` },
    );
  }
  steps.push({
    text: "Summary: the user asked for the notes 200 times; they were read each time.",
  });
  for (let index = 0; index < REFERENCE_PROMPTS; index++) steps.push({ text: "ok" });
  const script = join(dir, "script.json");
  await writeFile(script, JSON.stringify(steps));
  const config = join(dir, "config.json");
  // A window the session just stays under (a turn is about 1,050 estimated tokens), so it does
  // not compact by itself (threshold 1): `/compact` does.
  const window = turns * 2_000;
  await writeFile(config, JSON.stringify({ models: { scripted: { contextWindow: window } } }));
  const agent = start([
    "--config",
    config,
    "--model",
    "scripted",
    "--script",
    script,
    "--compact-threshold",
    "1",
    "--mode",
    "auto",
  ], home);
  let compaction: SessionUpdateParams["update"] | undefined;
  agent.onUpdate = (params) => {
    if (params.update?.sessionUpdate === "compaction_update") compaction = params.update;
  };
  try {
    await agent.request("initialize", {
      protocolVersion: 1,
      clientCapabilities: { session: { compaction: {} } },
    });
    const { result } = await agent.request("session/new", { cwd, mcpServers: [] });
    const sessionId = (result as { sessionId: string }).sessionId;
    const prompt = async (text: string): Promise<number> => {
      const sent = performance.now();
      const { at } = await agent.request("session/prompt", {
        sessionId,
        prompt: [{ type: "text", text }],
      }, { timeoutMs: 60_000 });
      return at - sent;
    };
    for (let turn = 0; turn < turns; turn++) await prompt(`Read notes.txt again (${turn}).`);
    const compactMs = await prompt("/compact");
    if (compaction?.status !== "completed") {
      throw new Error(`/compact did not complete: ${JSON.stringify(compaction)}`);
    }
    const reference: number[] = [];
    for (let index = 0; index < REFERENCE_PROMPTS; index++) reference.push(await prompt("next"));
    agent.closeStdin();
    await agent.waitExit();
    const log = await sessionLog(home);
    const records = log.text.split("\n").filter((line) => line.includes('"type":"compaction"'))
      .map((line) => JSON.parse(line) as CompactionRecord);
    const record = records.find((entry) => entry.reason === "command");
    if (!record) throw new Error("no record of the /compact in the log");
    if (records.length > 1) throw new Error("the session compacted by itself before /compact");
    // Each turn: the prompt, the tool call, its result, the answer.
    const messagesBefore = turns * 4;
    return {
      turns,
      compactMs,
      promptMs: median(reference),
      messagesBefore,
      messagesAfter: messagesBefore - record.replaced + 1,
      tokensBefore: record.tokensBefore,
      tokensAfter: record.tokensAfter,
      logBytes: log.bytes,
      window,
    };
  } finally {
    agent.closeStdin();
    await agent.waitExit();
  }
}

interface CompactionRecord {
  readonly reason: string;
  readonly replaced: number;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
}

/** The one session log under a data directory. */
async function sessionLog(home: string): Promise<{ text: string; bytes: number }> {
  const dir = join(home, "sessions");
  const files = (await readdir(dir)).filter((name) => name.endsWith(".jsonl"));
  if (files.length !== 1) throw new Error(`expected one session log in ${dir}: ${files}`);
  const bytes = await readFile(join(dir, files[0] as string));
  return { text: new TextDecoder().decode(bytes), bytes: bytes.length };
}
