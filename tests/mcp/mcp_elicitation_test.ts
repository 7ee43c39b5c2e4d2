/**
 * MCP elicitation at the connection: a server's question during a `tools/call` goes to the
 * call's asker, outside a call (or without an asker) it is declined, URL questions are offered
 * only when the client takes them, `notifications/elicitation/complete` is passed on for accepted
 * URL questions only, a withdrawn question aborts the asker's signal, and the time the user takes
 * is not counted against the call's timeout. Against the fake stdio server with `--elicit`.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { NodeHost } from "../../src/host/node_host.ts";
import { nullLogger } from "../../src/log/logger.ts";
import {
  McpConnection,
  type McpConnectionOptions,
  type McpElicit,
} from "../../src/mcp/mcp_connection.ts";
import type { ElicitationRequest } from "../../src/tools/elicitation.ts";
import { fakeStdio, killProcessesWithMarker } from "../_helpers/mcp_servers.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";

const never = new AbortController().signal;

/** A connection to the fake server with its question tools, and its marker. */
async function open(
  overrides: Partial<McpConnectionOptions> & { env?: Record<string, string> } = {},
): Promise<{ connection: McpConnection; marker: string }> {
  const marker = `mcp-elicitation-test-${crypto.randomUUID()}`;
  const { command, args } = fakeStdio("--elicit", `--marker=${marker}`);
  const connection = await McpConnection.open({
    spec: {
      name: "fake",
      declaredName: "fake",
      transport: "stdio",
      command,
      args,
      env: overrides.env ?? {},
    },
    processes: new NodeHost({ PATH: process.env.PATH }),
    cwd: "/",
    logger: nullLogger,
    logFields: {},
    startTimeoutMs: 10_000,
    callTimeoutMs: 10_000,
    ...overrides,
  }, never);
  return { connection, marker };
}

/** Closes the connection; fails if a server process is left. */
async function close(connection: McpConnection, marker: string): Promise<void> {
  await connection.close();
  assert.deepEqual(await killProcessesWithMarker(marker), [], "no server process is left");
}

/** The text of a call's answer, parsed as the JSON the fake puts there. */
function answerOf(result: { content: unknown }): unknown {
  const [block] = result.content as Array<{ type: string; text: string }>;
  return JSON.parse(block?.text ?? "null");
}

Deno.test("McpConnection: a form question during a call reaches the call's asker; its answer reaches the server", async () => {
  const { connection, marker } = await open();
  try {
    const asked: Array<{ request: ElicitationRequest; signal: AbortSignal | undefined }> = [];
    const elicit: McpElicit = (request, signal) => {
      asked.push({ request, signal });
      return Promise.resolve({ action: "accept", content: { name: "Ada" } });
    };
    const schema = {
      type: "object",
      properties: { name: { type: "string", title: "Name" } },
      required: ["name"],
    };
    const result = await connection.callTool(
      "elicit",
      { message: "Who are you?", schema },
      never,
      { elicit },
    );
    assert.deepEqual(answerOf(result), { action: "accept", content: { name: "Ada" } });
    assert.equal(asked.length, 1);
    assert.deepEqual(asked[0]?.request, {
      mode: "form",
      message: "Who are you?",
      requestedSchema: schema,
    });
    assert.ok(asked[0]?.signal instanceof AbortSignal, "the server's withdrawal signal");
    for (const action of ["decline", "cancel"] as const) {
      const answered = await connection.callTool("elicit", {}, never, {
        elicit: () => Promise.resolve({ action }),
      });
      assert.deepEqual(answerOf(answered), { action });
    }
  } finally {
    await close(connection, marker);
  }
});

Deno.test("McpConnection: without an asker, or outside a call, the server's question is declined", async () => {
  await using dir = await tempDir("acp-harness-mcp-elicitation-");
  const events = join(dir.path, "events.log");
  const { connection, marker } = await open({ env: { FAKE_MCP_EVENTS: events } });
  try {
    const result = await connection.callTool("elicit", {}, never);
    assert.deepEqual(answerOf(result), { action: "decline" });
    // Asked after its call answered: no call can relay it, whoever asks.
    const elicit: McpElicit = () => Promise.reject(new Error("must not be asked"));
    await connection.callTool("elicit_later", {}, never, { elicit });
    await pollUntil(
      async () => (await readFile(events, "utf8").catch(() => "")).includes("question-2"),
      { what: "the server's question outside a call answered" },
    );
    assert.match(await readFile(events, "utf8"), /^answer question-2 \{"action":"decline"\}$/m);
  } finally {
    await close(connection, marker);
  }
});

Deno.test("McpConnection: URL questions are offered only when the client takes them; complete is passed on", async () => {
  const url = "https://login.example.test/flow?state=abc";
  const without = await open();
  try {
    const refused = await without.connection.callTool("elicit", { mode: "url", url }, never, {
      elicit: () => Promise.reject(new Error("must not be asked")),
    });
    // The MCP client refuses a mode it did not advertise before any asker sees it.
    assert.match(JSON.stringify(answerOf(refused)), /URL-mode/);
  } finally {
    await close(without.connection, without.marker);
  }
  const completed: string[] = [];
  const done = Promise.withResolvers<void>();
  const { connection, marker } = await open({
    elicitation: {
      url: true,
      complete: (id) => {
        completed.push(id);
        done.resolve();
      },
    },
  });
  try {
    const asked: ElicitationRequest[] = [];
    // Declined: its complete (the server sends none then) would not be passed on anyway.
    const declined = await connection.callTool(
      "elicit",
      { mode: "url", url, elicitationId: "flow-declined" },
      never,
      {
        elicit: (request) => {
          asked.push(request);
          return Promise.resolve({ action: "decline" });
        },
      },
    );
    assert.deepEqual(answerOf(declined), { action: "decline" });
    const accepted = await connection.callTool(
      "elicit",
      { mode: "url", url, elicitationId: "flow-7", complete: true, message: "Log in" },
      never,
      {
        elicit: (request) => {
          asked.push(request);
          return Promise.resolve({ action: "accept" });
        },
      },
    );
    assert.deepEqual(answerOf(accepted), { action: "accept" });
    assert.deepEqual(asked.at(-1), {
      mode: "url",
      message: "Log in",
      url,
      elicitationId: "flow-7",
    });
    await done.promise;
    assert.deepEqual(completed, ["flow-7"]);
  } finally {
    await close(connection, marker);
  }
});

Deno.test("McpConnection: a question the server withdraws aborts the asker's signal", async () => {
  const { connection, marker } = await open();
  try {
    const asked = Promise.withResolvers<AbortSignal>();
    const withdrawn = Promise.withResolvers<void>();
    const elicit: McpElicit = (_request, signal) => {
      asked.resolve(signal as AbortSignal);
      signal?.addEventListener("abort", () => withdrawn.resolve(), { once: true });
      return new Promise((resolve) =>
        signal?.addEventListener("abort", () => resolve({ action: "cancel" }), { once: true })
      );
    };
    const calling = connection.callTool("elicit", {}, never, { elicit });
    const signal = await asked.promise;
    assert.equal(signal.aborted, false);
    const withdraw = await connection.callTool("withdraw", {}, never);
    assert.deepEqual(withdraw.content, [{ type: "text", text: "withdrew 1" }]);
    await withdrawn.promise;
    assert.equal(signal.aborted, true);
    assert.deepEqual((await calling).content, [{ type: "text", text: "withdrawn" }]);
  } finally {
    await close(connection, marker);
  }
});

Deno.test("McpConnection: the user's time to answer does not count against the call's timeout", async () => {
  const { connection, marker } = await open({ callTimeoutMs: 300 });
  try {
    // The user takes longer than the whole call may: the call still gets its answer.
    const elicit: McpElicit = async () => {
      await new Promise((resolve) => setTimeout(resolve, 700));
      return { action: "accept", content: { name: "slow typist" } };
    };
    const result = await connection.callTool("elicit", {}, never, { elicit });
    assert.deepEqual(answerOf(result), { action: "accept", content: { name: "slow typist" } });
    // Without a question the timeout still holds.
    await assert.rejects(connection.callTool("slow", {}, never), /within 0\.3 s/);
  } finally {
    await close(connection, marker);
  }
});

Deno.test("McpConnection: cancelling the call withdraws its question (the asker's signal is the call's)", async () => {
  await using dir = await tempDir("acp-harness-mcp-elicitation-");
  const events = join(dir.path, "events.log");
  const { connection, marker } = await open({ env: { FAKE_MCP_EVENTS: events } });
  try {
    const controller = new AbortController();
    const asked = Promise.withResolvers<void>();
    // The turn's asker: its question ends with the call's signal (as ToolContext.elicit's does).
    const elicit: McpElicit = () => {
      asked.resolve();
      return new Promise((resolve) =>
        controller.signal.addEventListener("abort", () => resolve({ action: "cancel" }), {
          once: true,
        })
      );
    };
    const calling = connection.callTool("elicit", {}, controller.signal, { elicit });
    await asked.promise;
    controller.abort();
    await assert.rejects(calling, /cancelled/);
    // The server is told the call is cancelled, and its question is answered `cancel`.
    await pollUntil(async () => {
      const text = await readFile(events, "utf8").catch(() => "");
      return /^cancelled /m.test(text) && /^answer question-1 \{"action":"cancel"\}$/m.test(text);
    }, { what: "the server told of the cancel and answered" });
  } finally {
    await close(connection, marker);
  }
});
