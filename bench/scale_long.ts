/**
 * The scale section's 10,000-turn session against a 400-turn one of the same shape: in a fresh
 * stdio server on the JSONL store each round (the data directory copied fresh, so every round
 * starts from the same log), `session/load` (request → answer, replay included), `session/fork`
 * of it, then `/compact` on the loaded session (the scripted model gives the summary, so the
 * time is the server's own work: the transcript, the estimates, the record, the updates).
 *
 * A turn is five events: `turn_start`, `user` (one text block), `assistant` (an answer, no tool
 * calls), `usage`, `turn_end`; the first turn also has the session's `config` and `title`. So
 * the long session has 50,002 events, the reference 2,002. Long and reference alternate.
 *
 * @module
 */
import { AgentProcess, oursCommand } from "./agent_process.ts";
import { INITIALIZE_PARAMS } from "./rpc_client.ts";
import { type ScaleSpread, spreadOf } from "./scale_serve.ts";
import type { Runtime } from "./settings.ts";

/** The two lengths measured (turns). */
export const LONG_TURNS = [400, 10_000] as const;

/** One length's figures. */
export interface ScaleLongSide {
  readonly turns: number;
  readonly events: number;
  readonly logMib: number;
  readonly loadMs: ScaleSpread;
  readonly forkMs: ScaleSpread;
  readonly compactMs: ScaleSpread;
  /** Replayed `session/update`s of one load. */
  readonly frames: number;
}

/** The section's figures. */
export interface ScaleLongResult {
  readonly runtime: Runtime;
  readonly rounds: number;
  readonly reference: ScaleLongSide;
  readonly long: ScaleLongSide;
}

/** Writes one session of `turns` turns; resolves with its id, event count and log size. */
async function writeLongSession(
  dataDir: string,
  cwd: string,
  turns: number,
): Promise<{ id: string; events: number; bytes: number }> {
  await Deno.mkdir(`${dataDir}/sessions`, { recursive: true });
  const id = crypto.randomUUID();
  const created = Date.now() - turns * 60_000 - 60_000;
  const createdAt = new Date(created).toISOString();
  const lines = [JSON.stringify({ version: 1, id, cwd, additionalDirectories: [], createdAt })];
  let seq = 0;
  let time = createdAt;
  const push = (event: Record<string, unknown>): void => {
    seq++;
    time = new Date(created + seq * 1_000).toISOString();
    lines.push(JSON.stringify({ ...event, seq, time }));
  };
  let input = 1_000;
  for (let turn = 0; turn < turns; turn++) {
    if (turn === 0) push({ type: "config", model: "scripted", mode: "auto" });
    push({ type: "turn_start" });
    push({
      type: "user",
      messageId: crypto.randomUUID(),
      content: [{
        type: "text",
        text: `Step ${turn}: check the next item on the list and report.`,
      }],
    });
    if (turn === 0) push({ type: "title", title: "A very long session" });
    push({
      type: "assistant",
      messageId: crypto.randomUUID(),
      text: `Item ${turn} checked: it is in order, nothing to change. `.repeat(3),
    });
    input += 60;
    push({ type: "usage", usage: { input, output: 50 }, used: input + 50, size: 10_000_000 });
    push({ type: "turn_end", stopReason: "end_turn" });
  }
  const text = lines.join("\n") + "\n";
  await Deno.writeTextFile(`${dataDir}/sessions/${id}.jsonl`, text);
  await Deno.writeTextFile(
    `${dataDir}/index.jsonl`,
    JSON.stringify({ acpHarnessIndex: 1, generation: crypto.randomUUID() }) + "\n" +
      JSON.stringify({
        id,
        cwd,
        additionalDirectories: [],
        title: "A very long session",
        updatedAt: time,
      }) +
      "\n",
  );
  return { id, events: seq, bytes: new TextEncoder().encode(text).length };
}

interface Sample {
  readonly load: number;
  readonly fork: number;
  readonly compact: number;
  readonly frames: number;
}

async function sample(
  runtime: Runtime,
  template: string,
  work: string,
  session: { id: string; cwd: string; script: string; config: string },
): Promise<Sample> {
  await Deno.remove(work, { recursive: true }).catch(() => {});
  const copied = await new Deno.Command("cp", { args: ["-R", template, work] }).output();
  if (!copied.success) throw new Error(`cannot copy ${template}`);
  const agent = new AgentProcess(
    `ours/${runtime}`,
    oursCommand(runtime, [
      ...["--data-dir", work, "--config", session.config, "--model", "scripted"],
      ...["--script", session.script, "--compact-threshold", "1", "--mode", "auto"],
    ]),
  );
  try {
    await agent.request("initialize", {
      ...INITIALIZE_PARAMS,
      clientCapabilities: { ...INITIALIZE_PARAMS.clientCapabilities, session: { compaction: {} } },
    });
    const params = { sessionId: session.id, cwd: session.cwd, mcpServers: [] };
    let frames = 0;
    agent.onUpdate = () => frames++;
    const loadAt = performance.now();
    const loaded = await agent.request("session/load", params, { timeoutMs: 300_000 });
    const replayed = frames;
    let compaction: string | undefined;
    agent.onUpdate = (update) => {
      if (update.update?.sessionUpdate === "compaction_update") {
        compaction = (update.update as { status?: string }).status;
      }
    };
    const forkAt = performance.now();
    const forked = await agent.request("session/fork", params, { timeoutMs: 300_000 });
    const compactAt = performance.now();
    const compacted = await agent.request("session/prompt", {
      sessionId: session.id,
      prompt: [{ type: "text", text: "/compact" }],
    }, { timeoutMs: 300_000 });
    if (compaction !== "completed") throw new Error(`/compact ended ${compaction ?? "silently"}`);
    return {
      load: loaded.at - loadAt,
      fork: forked.at - forkAt,
      compact: compacted.at - compactAt,
      frames: replayed,
    };
  } finally {
    agent.closeStdin();
    await agent.waitExit(60_000);
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}

/**
 * Measures load, fork and `/compact` of the two sessions in interleaved rounds.
 *
 * @param runtime The runtime ours runs on
 * @param tmp A scratch directory (the data goes in a directory of its own, removed after)
 * @param rounds Fresh servers per length
 * @returns The figures
 */
export async function measureScaleLong(
  runtime: Runtime,
  tmp: string,
  rounds: number,
  log: (line: string) => void,
): Promise<ScaleLongResult> {
  const dir = await Deno.makeTempDir({ dir: tmp, prefix: "scale_long_" });
  try {
    const cwd = await Deno.realPath(dir);
    const script = `${cwd}/script.json`;
    await Deno.writeTextFile(
      script,
      JSON.stringify([{ text: "Summary: items checked, all fine." }]),
    );
    const config = `${cwd}/config.json`;
    await Deno.writeTextFile(
      config,
      JSON.stringify({ models: { scripted: { contextWindow: 10_000_000 } } }),
    );
    const made: { template: string; turns: number; id: string; events: number; bytes: number }[] =
      [];
    for (const turns of LONG_TURNS) {
      const template = `${cwd}/data_${turns}`;
      made.push({ template, turns, ...await writeLongSession(template, cwd, turns) });
    }
    const samples: Sample[][] = [[], []];
    for (let r = -1; r < rounds; r++) {
      for (const which of r % 2 === 0 ? [0, 1] : [1, 0]) {
        const m = made[which]!;
        const s = await sample(runtime, m.template, `${cwd}/work`, {
          id: m.id,
          cwd,
          script,
          config,
        });
        log(
          `[bench] scale long ${m.turns} turns: load ${s.load.toFixed(0)} fork ` +
            `${s.fork.toFixed(0)} compact ${s.compact.toFixed(0)} ms`,
        );
        if (r >= 0) samples[which]!.push(s);
      }
    }
    const side = (which: number): ScaleLongSide => {
      const m = made[which]!;
      const list = samples[which]!;
      return {
        turns: m.turns,
        events: m.events,
        logMib: m.bytes / 1024 / 1024,
        loadMs: spreadOf(list.map((s) => s.load)),
        forkMs: spreadOf(list.map((s) => s.fork)),
        compactMs: spreadOf(list.map((s) => s.compact)),
        frames: list[0]?.frames ?? 0,
      };
    };
    return { runtime, rounds, reference: side(0), long: side(1) };
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
