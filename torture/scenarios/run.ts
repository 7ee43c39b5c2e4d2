/**
 * `acp-harness run` as a CI job would meet it: real `run` processes, each one prompt, ended every
 * way a job ends: on its own, refused permission with nobody to ask, SIGINT or SIGTERM while a
 * command or a model request runs, a signal before the prompt is even sent, the turn's time
 * limit while a command runs, and a tool-call limit. Each must exit with its documented code,
 * print one document valid against `docs/run_result.schema.json` (with `--json`; the last line
 * with `--jsonl`), run no more tool calls than its limit (more is a budget escape), write nothing
 * it was refused, and leave no process behind.
 *
 * @module
 */
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { hunt, killAll } from "../../tests/_helpers/marked_processes.ts";
import type { Scenario, ScenarioContext } from "../context.ts";
import { MARKER_VARIABLE, random, ROOT, writeScript } from "../driver.ts";

const KINDS = [
  "plain",
  "denied",
  "interrupt-command",
  "interrupt-model",
  "early-signal",
  "timeout",
  "tool-limit",
] as const;
type Kind = typeof KINDS[number];

/** A hung run is killed after this long (a bound, not a wait). */
const HANG_MS = 60_000;

/** How long a command's processes may take to go once the run exited (bounded poll). */
const GONE_WITHIN_MS = 5_000;

const schema = JSON.parse(await readFile(join(ROOT, "docs/run_result.schema.json"), "utf8"));
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);

/** What a run came to. */
export interface Ran {
  readonly code: number | null;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly hung: boolean;
}

/** When to signal the run: at once, or once its output matches. */
export interface Trigger {
  readonly signal: "SIGINT" | "SIGTERM";
  readonly when: RegExp | "at-once";
}

/**
 * One `acp-harness run` process, to its exit. `Deno.Command`, not `node:child_process`: Deno's
 * `ChildProcess` reports a process it signalled as killed by that signal even when it exited
 * with a code of its own (130).
 */
export async function runOnce(
  context: ScenarioContext,
  cwd: string,
  marker: string,
  args: readonly string[],
  trigger?: Trigger,
  env: Record<string, string> = {},
): Promise<Ran> {
  const { runtime } = context;
  const bound = new AbortController();
  const child = new Deno.Command(runtime.command, {
    args: [...runtime.args, "run", ...args],
    cwd,
    env: { NO_COLOR: "1", [MARKER_VARIABLE]: marker, ...env },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: bound.signal,
  }).spawn();
  let stdout = "";
  let stderr = "";
  let signalled = false;
  let hung = false;
  const fire = (): void => {
    if (signalled || !trigger) return;
    signalled = true;
    try {
      child.kill(trigger.signal);
    } catch {
      // It exited already.
    }
  };
  if (trigger?.when === "at-once") fire();
  const read = async (stream: ReadableStream<Uint8Array>, add: (text: string) => void) => {
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      add(text);
      if (trigger && trigger.when !== "at-once" && trigger.when.test(stdout + stderr)) fire();
    }
  };
  // A bound on a hung run: killed when it passes.
  const timer = setTimeout(() => {
    hung = true;
    bound.abort();
  }, HANG_MS);
  try {
    const [status] = await Promise.all([
      child.status,
      read(child.stdout, (text) => stdout += text),
      read(child.stderr, (text) => stderr += text),
    ]);
    return {
      code: status.signal ? null : status.code,
      signal: status.signal,
      stdout,
      stderr,
      hung,
    };
  } finally {
    clearTimeout(timer);
  }
}

/** The run's result document: `--json`'s stdout, `--jsonl`'s last line; fails when invalid. */
function documentOf(
  context: ScenarioContext,
  label: string,
  ran: Ran,
  lines: boolean,
): Record<string, unknown> | undefined {
  const text = lines ? ran.stdout.trimEnd().split("\n").pop() ?? "" : ran.stdout;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    context.fail(
      "other",
      "no document",
      `${label}: ${text.slice(0, 200)} | ${ran.stderr.slice(-200)}`,
    );
    return undefined;
  }
  if (!validate(document)) {
    context.fail("other", "invalid document", `${label}: ${JSON.stringify(validate.errors)}`);
    return undefined;
  }
  return document as Record<string, unknown>;
}

/** Fails unless the run exited with `code` (and did not hang). */
function expectCode(context: ScenarioContext, label: string, ran: Ran, code: number): boolean {
  if (ran.hung) {
    context.fail(
      "other",
      "hang",
      `${label}: no exit in ${HANG_MS / 1000} s: ${ran.stderr.slice(-300)}`,
    );
    return false;
  }
  if (ran.code === code) return true;
  context.fail(
    "other",
    "exit code",
    `${label}: exit ${ran.code ?? ran.signal}, not ${code}: ${ran.stderr.slice(-300)}`,
  );
  return false;
}

/** Counts what is left of a case's processes once its run exited (polled up to the bound). */
async function noLeftovers(context: ScenarioContext, label: string, marker: string): Promise<void> {
  const left = await hunt(marker, GONE_WITHIN_MS);
  if (left.length === 0) return;
  context.fail("leftovers", label, left.map(({ command }) => command).join("; "), left.length);
  killAll(left);
}

/** A command that runs for minutes, with the marker on its shell's command line. */
function slowCommand(marker: string): string {
  return `: ${marker}; sleep 300`;
}

/** One case: where it runs, its marker, its label, the signal it may send, its random picks. */
interface Case {
  readonly context: ScenarioContext;
  readonly kind: Kind;
  readonly cwd: string;
  readonly marker: string;
  readonly label: string;
  readonly signal: "SIGINT" | "SIGTERM";
  readonly pick: () => number;
  /** The flags of the scripted model with these steps, and the case's data directory. */
  scripted(steps: unknown[]): Promise<string[]>;
}

async function oneCase(context: ScenarioContext, kind: Kind, index: number): Promise<void> {
  const dir = join(context.base, `case-${index}`);
  const cwd = join(dir, "ws");
  await mkdir(cwd, { recursive: true });
  const pick = random(context.seed + index);
  context.run();
  await CASES[kind]({
    context,
    kind,
    cwd,
    marker: context.newMarker(),
    label: `${kind} #${index}`,
    signal: pick() < 0.5 ? "SIGINT" : "SIGTERM",
    pick,
    scripted: async (steps) => [
      "--data-dir",
      join(dir, "data"),
      "--model",
      "scripted",
      "--script",
      await writeScript(dir, "script.json", steps),
    ],
  });
}

/** Ends on its own; `--continue` goes on in the durable session. */
async function runPlain(one: Case): Promise<void> {
  const { context, cwd, marker, label, scripted } = one;
  const flags = await scripted([
    { toolCalls: [{ name: "list_directory", arguments: { path: "." } }] },
    { text: "first" },
    { text: "second" },
  ]);
  const first = await runOnce(context, cwd, marker, [...flags, "--json", "list it"]);
  if (!expectCode(context, label, first, 0)) return;
  const doc = documentOf(context, label, first, false);
  if (doc && (doc.text !== "first" || (doc.toolCalls as unknown[]).length !== 1)) {
    context.fail("other", "wrong result", `${label}: ${first.stdout.slice(0, 300)}`);
  }
  // The session is durable: --continue goes on in it.
  const next = await runOnce(context, cwd, marker, [...flags, "--continue", "--json", "more"]);
  if (!expectCode(context, `${label} --continue`, next, 0)) return;
  const continued = documentOf(context, `${label} --continue`, next, false);
  if (continued && (continued.sessionId !== doc?.sessionId || continued.text !== "second")) {
    context.fail("other", "not continued", `${label}: ${next.stdout.slice(0, 300)}`);
  }
}

/** `ask` mode with nobody to ask: both calls refused and listed, nothing written. */
async function runDenied(one: Case): Promise<void> {
  const { context, cwd, marker, label, scripted } = one;
  const flags = await scripted([
    {
      toolCalls: [
        { name: "write_file", arguments: { path: "refused.txt", content: "x" } },
        { name: "run_command", arguments: { command: "touch ran.txt" } },
      ],
    },
    { text: "refused" },
  ]);
  const ran = await runOnce(context, cwd, marker, [...flags, "--ephemeral", "--json", "try"]);
  if (!expectCode(context, label, ran, 0)) return;
  const doc = documentOf(context, label, ran, false);
  const denied = (doc?.denied ?? []) as unknown[];
  if (doc && denied.length !== 2) {
    context.fail("other", "denied list", `${label}: ${JSON.stringify(doc.denied)}`);
  }
  const written = (await readdir(cwd)).filter((name) => name.endsWith(".txt"));
  context.fail(
    "escapes",
    "refused call ran",
    `${label}: ${written.join(", ")}`,
    written.length,
  );
}

/** SIGINT or SIGTERM while a command runs or the model thinks: exit 130, cancelled. */
async function runInterrupted(one: Case): Promise<void> {
  const { context, kind, cwd, marker, label, signal, scripted } = one;
  const steps = kind === "interrupt-command"
    ? [{ toolCalls: [{ name: "run_command", arguments: { command: slowCommand(marker) } }] }]
    : [
      { toolCalls: [{ name: "list_directory", arguments: { path: "." } }] },
      { delayMs: 120_000, text: "too late" },
    ];
  const flags = await scripted([...steps, { text: "never" }]);
  // Signalled once the command runs, or once the listing is done and the model thinks.
  const when = kind === "interrupt-command" ? /"status":"in_progress"/ : /"status":"completed"/;
  const ran = await runOnce(
    context,
    cwd,
    marker,
    [...flags, "--ephemeral", "--mode", "auto", "--jsonl", "go"],
    { signal, when },
  );
  await noLeftovers(context, `${label} ${signal}`, marker);
  if (!expectCode(context, `${label} ${signal}`, ran, 130)) return;
  const doc = documentOf(context, `${label} ${signal}`, ran, true);
  if (doc && doc.stopReason !== "cancelled") {
    context.fail("other", "stop reason", `${label}: ${String(doc.stopReason)}`);
  }
}

/** A signal at once, before the prompt is sent: 130, or the signal's default death. */
async function runEarlySignal(one: Case): Promise<void> {
  const { context, cwd, marker, label, signal, scripted } = one;
  const flags = await scripted([{ delayMs: 120_000, text: "too late" }]);
  const ran = await runOnce(context, cwd, marker, [...flags, "--ephemeral", "--json", "go"], {
    signal,
    when: "at-once",
  });
  if (ran.hung) {
    context.fail("other", "hang", `${label}: no exit after an early ${signal}`);
    return;
  }
  await noLeftovers(context, label, marker);
  // Before the runtime installed the handlers the signal's default ends the process.
  if (ran.code === 130 || ran.signal === signal) {
    if (ran.stdout !== "") documentOf(context, label, ran, false);
    return;
  }
  context.fail(
    "other",
    "exit code",
    `${label}: exit ${ran.code ?? ran.signal} after ${signal}`,
  );
}

/** The turn's second passes while a command runs: exit 4, the command gone. */
async function runTimeout(one: Case): Promise<void> {
  const { context, cwd, marker, label, scripted } = one;
  const flags = await scripted([
    { toolCalls: [{ name: "run_command", arguments: { command: slowCommand(marker) } }] },
    { text: "never" },
  ]);
  const ran = await runOnce(context, cwd, marker, [
    ...flags,
    "--ephemeral",
    "--mode",
    "auto",
    "--turn-timeout",
    "1",
    "--json",
    "go",
  ]);
  await noLeftovers(context, label, marker);
  if (!expectCode(context, label, ran, 4)) return;
  const doc = documentOf(context, label, ran, false);
  const budget = doc?.budget as { reached?: string } | null | undefined;
  if (doc && (doc.stopReason !== "max_turn_requests" || budget?.reached !== "turnTimeout")) {
    context.fail("other", "stop reason", `${label}: ${ran.stdout.slice(0, 300)}`);
  }
}

/** Four writes under a limit of one to four: exactly that many run. */
async function runToolLimit(one: Case): Promise<void> {
  const { context, cwd, marker, label, pick, scripted } = one;
  const limit = 1 + Math.floor(pick() * 4);
  const flags = await scripted([
    {
      toolCalls: Array.from({ length: 4 }, (_, at) => ({
        name: "write_file",
        arguments: { path: `ran-${at}.txt`, content: "x" },
      })),
    },
    { text: "done" },
  ]);
  const ran = await runOnce(context, cwd, marker, [
    ...flags,
    "--ephemeral",
    "--mode",
    "auto",
    "--max-tool-calls",
    String(limit),
    "--json",
    "write",
  ]);
  const written = (await readdir(cwd)).filter((name) => name.startsWith("ran-")).length;
  if (written > limit) {
    context.fail(
      "escapes",
      "budget",
      `${label}: ${written} of limit ${limit} ran`,
      written - limit,
    );
  }
  if (!expectCode(context, `${label} limit ${limit}`, ran, limit < 4 ? 4 : 0)) return;
  documentOf(context, label, ran, false);
}

const CASES: Readonly<Record<Kind, (one: Case) => Promise<void>>> = {
  "plain": runPlain,
  "denied": runDenied,
  "interrupt-command": runInterrupted,
  "interrupt-model": runInterrupted,
  "early-signal": runEarlySignal,
  "timeout": runTimeout,
  "tool-limit": runToolLimit,
};

/** See the module doc. */
export const run: Scenario = {
  name: "run",
  description:
    "acp-harness run ended 7 ways (signals mid-command and mid-request, limits, refusals): exit codes, documents, no leftovers",
  async run(context: ScenarioContext): Promise<void> {
    const rounds = context.pick(4, 2, 1);
    const cases: Kind[] = [];
    for (let round = 0; round < rounds; round++) cases.push(...KINDS);
    const parallel = 3;
    for (let start = 0; start < cases.length; start += parallel) {
      await Promise.all(
        cases.slice(start, start + parallel).map(async (kind, offset) => {
          await oneCase(context, kind, start + offset);
        }),
      );
    }
  },
};
