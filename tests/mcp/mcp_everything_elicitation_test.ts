/**
 * The reference `@modelcontextprotocol/server-everything` asking questions: its
 * `trigger-elicitation-request` tool's form (every field kind MCP has) reaches a client that shows
 * forms as a schema-valid `elicitation/create`, and the tool's result shows the answer; a client
 * that declines, and one without the capability, make the server get a decline. In memory, with
 * the scripted model; every frame checked against the ACP schema.
 *
 * @module
 */
import assert from "node:assert/strict";
import process from "node:process";
import { everythingStdio } from "../_helpers/mcp_servers.ts";
import { type MemoryServer, startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { contentText, lastToolUpdate } from "./_session_helpers.ts";

const TOOL = "mcp__everything__trigger-elicitation-request";

/** An answer that fits the server's form. */
const ANSWER = {
  name: "Ada Lovelace",
  check: true,
  email: "ada@example.test",
  integer: 7,
  untitledSingleSelectEnum: "Joey",
  titledMultipleSelectEnum: ["fish-2"],
};

/**
 * Runs the tool once in a new session with a client advertising `capabilities` and answering
 * questions with `answer`; resolves with the tool's result text and the questions asked.
 */
async function trigger(
  dirs: TempDirs,
  capabilities: Record<string, unknown>,
  answer?: (params: unknown) => unknown,
): Promise<{ text: string; status: unknown; asked: unknown[]; server: MemoryServer }> {
  const cwd = await dirs.make();
  const server = startServer({
    config: { model: "scripted", mode: "auto" },
    env: { PATH: process.env.PATH ?? "" },
    script: [{ toolCalls: [{ id: "e1", name: TOOL, arguments: {} }] }, { text: "done" }],
  });
  try {
    const asked: unknown[] = [];
    if (answer) {
      server.client.handlers.set("elicitation/create", (params) => {
        asked.push(params);
        return answer(params);
      });
    }
    await server.client.initialize(capabilities);
    const sessionId = await server.client.newSession(cwd, {
      mcpServers: [{ name: "everything", ...everythingStdio(), env: [] }],
    });
    assert.equal(await server.client.prompt(sessionId, "trigger it"), "end_turn");
    const done = lastToolUpdate(server, sessionId, "e1");
    assert.deepEqual(server.client.problems, []);
    await server.client.request("session/close", { sessionId });
    return { text: contentText(done), status: done.status, asked, server };
  } finally {
    await server.disconnect();
  }
}

Deno.test("server-everything's elicitation reaches a client that shows forms, and the answer reaches the server", async () => {
  await using dirs = new TempDirs("acp-harness-everything-elicitation-");
  const { text, status, asked } = await trigger(
    dirs,
    { elicitation: { form: {} } },
    () => ({ action: "accept", content: ANSWER }),
  );
  assert.equal(status, "completed");
  assert.equal(asked.length, 1);
  const params = asked[0] as {
    mode: string;
    message: string;
    toolCallId: string;
    requestedSchema: { properties: Record<string, unknown>; required: string[] };
  };
  assert.equal(params.mode, "form");
  assert.equal(params.toolCallId, "e1");
  assert.equal(params.message, "Please provide inputs for the following fields:");
  assert.deepEqual(params.requestedSchema.required, ["name"]);
  // The server's form is passed on whole: every kind of field it asks.
  assert.deepEqual(Object.keys(params.requestedSchema.properties).sort(), [
    "birthdate",
    "check",
    "email",
    "firstLine",
    "homepage",
    "integer",
    "legacyTitledEnum",
    "name",
    "number",
    "titledMultipleSelectEnum",
    "titledSingleSelectEnum",
    "untitledMultipleSelectEnum",
    "untitledSingleSelectEnum",
  ]);
  assert.match(text, /User provided the requested information/);
  assert.match(text, /- Name: Ada Lovelace/);
  assert.match(text, /- Agreed to terms: true/);
  assert.match(text, /- Favorite Integer: 7/);
  assert.match(text, /"titledMultipleSelectEnum": \[\s*"fish-2"\s*\]/);
});

Deno.test("server-everything gets a decline from a client that declines, that answers badly, and from one without the capability", async () => {
  await using dirs = new TempDirs("acp-harness-everything-elicitation-");
  const declined = await trigger(dirs, { elicitation: { form: {} } }, () => ({
    action: "decline",
  }));
  assert.match(declined.text, /User declined to provide the requested information/);
  assert.equal(declined.asked.length, 1);
  // An answer that does not fit the form (a choice it does not offer) is never an accept.
  const bad = await trigger(dirs, { elicitation: { form: {} } }, () => ({
    action: "accept",
    content: { ...ANSWER, untitledSingleSelectEnum: "Gunther" },
  }));
  assert.match(bad.text, /User declined to provide the requested information/);
  // No capability: the server is still told forms are taken, and gets a decline.
  const without = await trigger(dirs, {}, () => {
    throw new Error("must not be asked");
  });
  assert.equal(without.asked.length, 0);
  assert.match(without.text, /User declined to provide the requested information/);
  assert.ok(
    without.server.logs.some((line) =>
      line.includes("MCP server question declined: nobody can answer it in this session")
    ),
  );
});
