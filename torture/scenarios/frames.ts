/**
 * Malformed frames: invalid JSON, invalid UTF-8, deep nesting, wrong JSON-RPC shapes, wrong
 * parameter types for every method, odd ids, several frames in one write. The server must answer
 * each well-formed request, write only JSON to stdout, echo ids exactly, never answer bad input
 * with an internal error, and keep serving.
 *
 * @module
 */
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { random, type Server } from "../driver.ts";

const METHODS = [
  "initialize",
  "session/new",
  "session/load",
  "session/resume",
  "session/prompt",
  "session/list",
  "session/close",
  "session/delete",
  "session/fork",
  "_session/steering",
  "session/set_mode",
  "session/set_config_option",
  "session/cancel",
  "$/cancel_request",
  "authenticate",
];

const VALUES: readonly unknown[] = [
  null,
  true,
  0,
  -1,
  1e308,
  "",
  "x",
  "\u0000",
  "x".repeat(5_000),
  [],
  {},
  [1, 2],
  { a: { b: { c: [] } } },
  "/",
  "../..",
  "/nonexistent/dir",
  "00000000-0000-0000-0000-000000000000",
];

/** One malformed line (without the newline) made from `next`. */
export function malformedLine(next: () => number, cwd: string): string {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const method = pick(METHODS);
  const id = pick<unknown>([1, "a", null, 1.5, -7, { x: 1 }, [1], true, 2 ** 53 + 1]);
  switch (Math.floor(next() * 14)) {
    case 0:
      return pick(["{", "}", "[", "nul", '{"jsonrpc":', '"str"', "42", "null", "true", "[]"]);
    case 1:
      return "[".repeat(1 + Math.floor(next() * 200_000));
    case 2:
      return `{"jsonrpc":"2.0","id":1,"method":"session/list","params":${"[".repeat(50_000)}${
        "]".repeat(50_000)
      }}`;
    case 3:
      return String.fromCharCode(...Array.from({ length: 64 }, () => Math.floor(next() * 256)));
    case 4:
      return JSON.stringify({ jsonrpc: pick(["1.0", 2, null, ""]), id: 5, method });
    case 5:
      return JSON.stringify({ jsonrpc: "2.0", id, method: pick([method, 7, null, "", "x/y"]) });
    case 6:
      return JSON.stringify({ jsonrpc: "2.0", id: 9, method, params: pick(VALUES) });
    case 7: {
      const params: Record<string, unknown> = {
        sessionId: pick(VALUES),
        cwd: pick([cwd, ...VALUES]),
        mcpServers: pick([[], ...VALUES]),
        prompt: pick([[{ type: "text", text: "x" }], [{ type: pick(VALUES) }], ...VALUES]),
        modeId: pick(["read-only", ...VALUES]),
        configId: pick(["mode", "model", ...VALUES]),
        value: pick(VALUES),
        cursor: pick(VALUES),
        additionalDirectories: pick([[pick(VALUES)], ...VALUES]),
        protocolVersion: pick([1, ...VALUES]),
      };
      for (const key of Object.keys(params)) if (next() < 0.4) delete params[key];
      return JSON.stringify({ jsonrpc: "2.0", id: 10 + Math.floor(next() * 1000), method, params });
    }
    case 8:
      return JSON.stringify({ jsonrpc: "2.0", id: 3, result: pick(VALUES) });
    case 9:
      return JSON.stringify({
        jsonrpc: "2.0",
        id: 4,
        error: pick([{ code: 1, message: "x" }, ...VALUES]),
      });
    case 10:
      return "\uFEFF" + JSON.stringify({ jsonrpc: "2.0", id: 11, method: "session/list" });
    case 11:
      return JSON.stringify({ jsonrpc: "2.0", id: 12, method: "session/list" }) + "\r";
    case 12:
      return JSON.stringify({ jsonrpc: "2.0", id: 13, method: "session/list" }).repeat(2);
    default:
      return JSON.stringify({ jsonrpc: "2.0", method, params: { sessionId: pick(VALUES) } });
  }
}

/** Raw lines whose answer must echo the id exactly. */
const EXACT_IDS = ["123456789012345678901234567890", '"\\u0000id"', '"' + "i".repeat(500) + '"'];

/** See the module doc. */
export const frames: Scenario = {
  name: "frames",
  description: "malformed frames in batches, then a probe that must be answered",
  async run(context: ScenarioContext): Promise<void> {
    const total = context.pick(2_000, 400, 60);
    const next = random(context.seed + 2);
    const cwd = join(context.base, "ws");
    await mkdir(cwd, { recursive: true });
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      args: ["--max-message-bytes", "1048576"],
    });
    await server.initialize();
    let sent = 0;
    while (sent < total) {
      const batch = Math.min(total - sent, 1 + Math.floor(next() * 40));
      const lines = Array.from({ length: batch }, () => malformedLine(next, cwd));
      const from = server.frames.length;
      // Mostly one write per batch; sometimes split in the middle of a line.
      const text = lines.join("\n") + "\n";
      if (next() < 0.2) {
        const cut = Math.floor(next() * text.length);
        await server.writeRaw(text.slice(0, cut));
        await server.writeRaw(text.slice(cut));
      } else await server.writeRaw(text);
      sent += batch;
      context.run(batch);
      if (!(await context.checkAnswers(server, `after ${sent} frames`))) return;
      const internal = server.frames.slice(from).filter((frame) =>
        (frame.error as { code?: number } | undefined)?.code === -32603
      );
      if (internal.length > 0) {
        context.fail(
          "other",
          "internal-error",
          JSON.stringify(internal[0]).slice(0, 300),
          internal.length,
        );
      }
    }
    // Bad values that must be named as such, not reported as internal errors.
    const bad = [
      { cwd: `${cwd}\u0000x`, mcpServers: [] },
      { cwd: `/${"d".repeat(5_000)}`, mcpServers: [] },
      { cwd, mcpServers: [], additionalDirectories: [`${cwd}\u0000`] },
      { cwd, mcpServers: [], additionalDirectories: [`/${"d".repeat(5_000)}`] },
    ];
    for (const params of bad) {
      context.run();
      const answer = await server.call("session/new", params, 10_000);
      const code = (answer?.error as { code?: number } | undefined)?.code;
      if (code !== -32602) {
        context.fail(
          "other",
          "wrong-code",
          `session/new ${JSON.stringify(params).slice(0, 80)} → ${
            JSON.stringify(answer?.error ?? answer?.result)
          }`,
        );
      }
    }
    for (const id of EXACT_IDS) {
      context.run();
      await server.writeRaw(`{"jsonrpc":"2.0","id":${id},"method":"torture/none"}\n`);
      const ok = await server.waitFor(
        () => server.lines.some((line) => line.includes(`"id":${id}`)),
        5_000,
      );
      if (!ok) {
        context.fail("other", "id-not-echoed", `id ${id.slice(0, 40)} did not come back as sent`);
      }
    }
    await flood(context, server);
    // Still serving: a session and a prompt work.
    const sessionId = await server.newSession(cwd);
    const prompt = server.promptRequest(sessionId, "still there?");
    await server.write(prompt.frame);
    if ((await server.response(prompt.id, 10_000)) === undefined) {
      context.fail("other", "hang", "a prompt after the malformed frames got no answer");
    }
  },
};

/** How much a server's peak resident set may grow in a flood, in kB. */
export const MAX_FLOOD_GROWTH_KB = 200 * 1024;

/**
 * Watches a process's memory through a flood: resets its peak resident set (`VmHWM`) and returns
 * how to read how far the peak then went past the resident set at the start, in kB (`undefined`
 * when `/proc` cannot tell).
 *
 * @param pid The process
 * @returns Reads the growth so far
 */
export function watchMemory(pid: number): () => number | undefined {
  const read = (field: string): number | undefined => {
    try {
      const status = Deno.readTextFileSync(`/proc/${pid}/status`);
      const match = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status);
      return match ? Number(match[1]) : undefined;
    } catch {
      return undefined;
    }
  };
  const before = read("VmRSS");
  try {
    Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
  } catch {
    // The peak then counts from the start: still a bound.
  }
  return () => {
    const peak = read("VmHWM");
    return before === undefined || peak === undefined ? undefined : peak - before;
  };
}

/**
 * A flood of `session/list` in one write (the server reads it a bounded number of requests at a
 * time): every one answered, the server's memory bounded.
 */
async function flood(context: ScenarioContext, server: Server): Promise<void> {
  const count = context.pick(50_000, 10_000, 1_000);
  const growth = watchMemory(server.pid);
  const from = server.frames.length;
  const text = Array.from(
    { length: count },
    (_, index) => `{"jsonrpc":"2.0","id":"flood-${index}","method":"session/list","params":{}}\n`,
  ).join("");
  await server.writeRaw(text);
  context.run(count);
  let seen = from;
  let answered = 0;
  const done = await server.waitFor(() => {
    for (; seen < server.frames.length; seen++) {
      const id = server.frames[seen]?.id;
      if (typeof id === "string" && id.startsWith("flood-")) answered++;
    }
    return answered >= count;
  }, 120_000);
  if (!done && !server.exit) {
    context.fail("other", "hang", `a flood of ${count} session/list: ${answered} answered`);
  }
  const grew = growth();
  if (grew !== undefined && grew > MAX_FLOOD_GROWTH_KB) {
    context.fail(
      "other",
      "unbounded-memory",
      `a flood of ${count} session/list grew the server by ${Math.round(grew / 1024)} MB`,
    );
  }
}
