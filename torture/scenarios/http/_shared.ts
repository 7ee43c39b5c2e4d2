/**
 * What the phases of the `http` scenario share: its limits, its environment and the small checks
 * every phase makes.
 *
 * @module
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { pollUntil } from "../../../tests/_helpers/wait.ts";
import type { ScenarioContext } from "../../context.ts";
import { findMarked, type MarkedProcess } from "../../../tests/_helpers/marked_processes.ts";
import type { Server } from "../../driver.ts";
import {
  type AcpClient,
  type Answer,
  KeyedClient,
  type Profile,
  type RawWebSocket,
  request,
  RfdClient,
  type Target,
  within,
  WsClient,
} from "../../http_client.ts";

/** `--max-message-bytes`: small, so that bodies over it are cheap. */
export const LIMIT = 1024 * 1024;
/** `--header-timeout` (s): how long a silent or slowloris socket is kept (./http_sockets.ts). */
export const HEADER_S = 2;
/** `--idle-timeout` (s): how soon a vanished HTTP client's connection is closed. */
export const IDLE_S = 5;
/** How long the idle check waits after a long turn before its next request (< IDLE_S). */
export const PACE_S = 2;
/** The server's process supervisor (src/host/process_guard.ts), by its command line. */
export const SUPERVISOR = /acp-harness-supervisor/;
/** Sleeps for what `.delay` in the session's directory says (0.2 s without one). */
const COMMAND = 'sleep "$(cat .delay 2>/dev/null || echo 0.2)"; echo slept';
/** One turn: a thought, text, the command, then text. */
export const TURN = [
  {
    thought: "Thinking.",
    text: ["Running ", "it."],
    toolCalls: [{ name: "run_command", arguments: { command: COMMAND } }],
  },
  { text: "Done." },
];

export type Rng = () => number;

/** What the phases share. */
export interface Env {
  readonly context: ScenarioContext;
  readonly server: Server;
  readonly target: Target;
  /** Where the sessions' directories go. */
  readonly root: string;
  readonly clients: AcpClient[];
  readonly sockets: RawWebSocket[];
  nextBase: number;
  nextKey: number;
  /** Set once the server is gone or wedged: the phases left are skipped. */
  broken: boolean;
}

export function choose<T>(rng: Rng, items: readonly T[]): T {
  return items[Math.floor(rng() * items.length)] as T;
}

/** Random latin1 text (any byte). */
export function randomBytes(rng: Rng, length: number): string {
  let text = "";
  for (let index = 0; index < length; index++) {
    text += String.fromCharCode(Math.floor(rng() * 256));
  }
  return text;
}

/** Text a header value may carry: control characters replaced. */
export function headerSafe(text: string): string {
  return [...text].map((char) => {
    const code = char.charCodeAt(0);
    return code < 0x20 || code === 0x7f ? "x" : char;
  }).join("");
}

/** Random letters and digits. */
export function randomWord(rng: Rng, length: number): string {
  const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let word = "";
  for (let index = 0; index < length; index++) word += choose(rng, [...letters]);
  return word;
}

/** A random UUID-shaped id. */
export function fakeUuid(rng: Rng): string {
  const hex = (length: number): string =>
    Array.from({ length }, () => Math.floor(rng() * 16).toString(16)).join("");
  return `${hex(8)}-${hex(4)}-4${hex(3)}-a${hex(3)}-${hex(12)}`;
}

/** A new client of a profile, with ids of its own. */
export function client(env: Env, profile: Profile, key?: string): AcpClient {
  const idBase = env.nextBase;
  env.nextBase += 1_000_000;
  const made = profile === "acp"
    ? new RfdClient(env.target, idBase)
    : profile === "keyed"
    ? new KeyedClient(env.target, idBase, key ?? `k${env.nextKey++}-${env.context.seed}`)
    : new WsClient(env.target, idBase);
  env.clients.push(made);
  return made;
}

/** A session directory; `.delay` sets how long its turns' command sleeps. */
export async function workspace(env: Env, name: string, delay?: string): Promise<string> {
  const dir = join(env.root, name);
  await mkdir(dir, { recursive: true });
  if (delay !== undefined) await writeFile(join(dir, ".delay"), delay);
  return dir;
}

/** `/health` answers `ok` within 10 s; otherwise a crash is counted and the server is broken. */
export async function alive(env: Env, where: string): Promise<boolean> {
  const health = await request(env.target, `${env.target.url}/health`, {}, 10_000);
  if (health.status === 200 && health.text === "ok") return true;
  env.broken = true;
  if (!env.context.checkCrash(env.server, where)) {
    env.context.fail(
      "crashes",
      where,
      `/health answered ${health.status} "${health.text.slice(0, 80)}" ${health.error ?? ""}: ${
        env.server.stderr.slice(-300)
      }`,
    );
  }
  return false;
}

/** Counts a 5xx (but 501, 503, 505) as `server-error`, and a status not in `expect` as `wrong-status`. */
export function checkStatus(
  env: Env,
  label: string,
  status: number,
  expect?: readonly number[],
): void {
  // 501 (method) and 505 (version) are answers to a request a server may not serve; 503 is busy.
  if (status >= 500 && ![501, 503, 505].includes(status)) {
    env.context.fail("other", "server-error", `${label}: ${status}`);
    return;
  }
  if (expect !== undefined && !expect.includes(status)) {
    env.context.fail(
      "other",
      "wrong-status",
      `${label}: ${status === 0 ? "no answer" : status} (expected ${expect.join(" or ")})`,
    );
  }
}

/** The stop reason of a prompt's answer. */
export function stopReason(answer: Answer): string | undefined {
  return (answer.frame?.result as { stopReason?: string } | undefined)?.stopReason;
}

/** What a whole turn of the script shows; the parts missing. */
export function turnGaps(updates: ReadonlyArray<Record<string, unknown>>): string[] {
  const text = (kind: string): string =>
    updates.filter((update) => update.sessionUpdate === kind)
      .map((update) => (update.content as { text?: string } | undefined)?.text ?? "").join("");
  const gaps: string[] = [];
  if (!text("agent_thought_chunk").includes("Thinking.")) gaps.push("thought");
  if (!text("agent_message_chunk").includes("Running it.")) gaps.push('"Running it."');
  if (!text("agent_message_chunk").includes("Done.")) gaps.push('"Done."');
  if (!updates.some((update) => update.sessionUpdate === "tool_call")) gaps.push("tool_call");
  if (
    !updates.some((update) =>
      update.sessionUpdate === "tool_call_update" && update.status === "completed"
    )
  ) gaps.push("completed command");
  return gaps;
}

/**
 * Runs a whole prompt on a new session of `client`; counts a failure and returns false unless it
 * ends `end_turn` with every update of the turn.
 */
export async function wholePrompt(
  env: Env,
  what: string,
  client: AcpClient,
  cwd: string,
): Promise<boolean> {
  const sessionId = await client.newSession(cwd);
  if (sessionId === undefined) {
    env.context.fail("other", "wedged", `${what}: session/new got no session`);
    return false;
  }
  const from = client.frames.length;
  const answer = await client.prompt(sessionId, `${what} prompt`);
  if (stopReason(answer) !== "end_turn") {
    env.context.fail(
      "other",
      answer.frame ? "bad-answer" : "hang",
      `${what}: prompt answered ${JSON.stringify(answer).slice(0, 300)}`,
    );
    return false;
  }
  const gaps = turnGaps(client.updates(sessionId, from));
  if (gaps.length > 0) {
    env.context.fail("other", "missing-update", `${what}: the turn lacked ${gaps.join(", ")}`);
    return false;
  }
  return true;
}

/** The marked processes whose command line matches, once gone or after `ms`. */
export async function goneWithin(env: Env, pattern: RegExp, ms: number): Promise<MarkedProcess[]> {
  let left: MarkedProcess[] = [];
  // Processes that are not our children end by no event we can wait on: only /proc tells.
  await pollUntil(async () => {
    left = (await findMarked(env.context.marker)).filter(({ command }) => pattern.test(command));
    return left.length === 0;
  }, { what: `no process running ${pattern}`, timeoutMs: ms, intervalMs: 50 }).catch(() => {});
  return left;
}

/**
 * Waits for `work` while `clients` keep talking (a request a second, `method`): a slow stretch
 * of the scenario must not leave them idle long enough for the idle limit.
 */
export async function keepingAlive<T>(
  work: Promise<T>,
  clients: readonly AcpClient[],
  method = "session/list",
): Promise<void> {
  const beat = async (live: AcpClient): Promise<void> => {
    while (!(await within(work, 1_000))) await live.call(method, {}, 10_000);
  };
  await Promise.all([work, ...clients.map(beat)]);
}

/** Connects a client; counts `connect-failed` and returns false when it could not. */
export async function connected(env: Env, what: string, client: AcpClient): Promise<boolean> {
  const problem = await client.connect();
  if (problem === undefined) return true;
  env.context.fail("other", "connect-failed", `${what} (${client.profile}): ${problem}`);
  client.vanish();
  return false;
}

/** Closes a client politely; counts `wrong-status` for a refused DELETE. */
export async function closeClient(env: Env, what: string, client: AcpClient): Promise<void> {
  if (!client.opened || client.ended) {
    client.vanish();
    return await client.settled();
  }
  const status = await client.close();
  if (client.profile === "acp") checkStatus(env, `${what}: DELETE`, status, [202]);
  if (client.profile === "keyed") checkStatus(env, `${what}: DELETE`, status, [204]);
  await client.settled();
}
