/**
 * End-to-end: the reference `@modelcontextprotocol/server-filesystem` over stdio in a session,
 * rooted at the session's cwd, driven by the scripted model through the in-memory server.
 *
 * Its tools' annotations decide the permission treatment: `read_text_file`, `list_directory`
 * (and its other readers) say `readOnlyHint: true`, so they read (kind `read`, never asked);
 * `write_file` says `readOnlyHint: false, destructiveHint: true` (kind `delete`, asked in `ask`
 * mode, refused in `read-only`); `create_directory` says neither read-only nor destructive (kind
 * `other`, asked too).
 */
import assert from "node:assert/strict";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { filesystemStdio } from "../_helpers/mcp_servers.ts";
import { type MemoryServer, startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { lastToolUpdate, toolUpdates } from "./_session_helpers.ts";
import type { PermissionMode } from "../../src/permission/mode.ts";

type Update = Record<string, unknown>;

const SERVER = "files";
const tool = (name: string): string => `mcp__${SERVER}__${name}`;

/** The last update of tool call `id`: its outcome once the turn ended. */
const outcome = lastToolUpdate;

/** The text blocks of tool call `id`'s outcome, joined. */
function textOf(server: MemoryServer, sessionId: string, id: string): string {
  const content = (outcome(server, sessionId, id).content ?? []) as Array<
    { content?: { type: string; text?: string } }
  >;
  return content.filter((item) => item.content?.type === "text").map((item) => item.content!.text)
    .join("\n");
}

/** What a started session gives a test; disposing of it disconnects the server. */
interface Started extends AsyncDisposable {
  readonly server: MemoryServer;
  readonly sessionId: string;
  /** The tool call ids permission was asked for, in order. */
  readonly asked: string[];
  /** The permission question for each asked tool call. */
  readonly questions: Update[];
}

/**
 * Starts a scripted server in `mode` and a session in `cwd` with the filesystem server rooted
 * there; permission questions are answered with `answers` in turn.
 */
async function start(
  cwd: string,
  mode: PermissionMode,
  script: unknown[],
  answers: string[] = [],
): Promise<Started> {
  const server = startServer({ config: { model: "scripted", mode }, script });
  const asked: string[] = [];
  const questions: Update[] = [];
  server.client.handlers.set("session/request_permission", (params) => {
    const toolCall = (params as { toolCall: Update }).toolCall;
    asked.push(toolCall.toolCallId as string);
    questions.push(toolCall);
    const optionId = answers[asked.length - 1] ?? "reject_once";
    return { outcome: { outcome: "selected", optionId } };
  });
  const started: Started = {
    server,
    sessionId: "",
    asked,
    questions,
    [Symbol.asyncDispose]: () => server.disconnect(),
  };
  try {
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd, {
      mcpServers: [{ name: SERVER, ...filesystemStdio(cwd), env: [] }],
    });
    return { ...started, sessionId };
  } catch (error) {
    await server.disconnect();
    throw error;
  }
}

Deno.test("filesystem over stdio: lists, reads and writes files in the session's cwd", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-files-");
  const cwd = await dirs.make();
  const elsewhere = await dirs.make();
  await writeFile(join(cwd, "a.txt"), "alpha\n");
  await writeFile(join(elsewhere, "secret.txt"), "not yours\n");
  await using session = await start(cwd, "auto", [
    {
      toolCalls: [
        { id: "l1", name: tool("list_directory"), arguments: { path: cwd } },
        { id: "r1", name: tool("read_text_file"), arguments: { path: join(cwd, "a.txt") } },
        {
          id: "r2",
          name: tool("read_text_file"),
          arguments: { path: join(elsewhere, "secret.txt") },
        },
      ],
    },
    {
      toolCalls: [
        {
          id: "w1",
          name: tool("write_file"),
          arguments: { path: join(cwd, "a.txt"), content: "changed\n" },
        },
        {
          id: "w2",
          name: tool("write_file"),
          arguments: { path: join(cwd, "b.txt"), content: "beta\n" },
        },
      ],
    },
    { toolCalls: [{ id: "r3", name: tool("read_text_file"), arguments: { path: "b.txt" } }] },
    { text: "done" },
  ]);
  const { server, sessionId, asked } = session;
  assert.equal(await server.client.prompt(sessionId, "look around, then write"), "end_turn");
  assert.deepEqual(asked, [], "auto mode asks nothing");

  const listed = toolUpdates(server, sessionId, "l1")[0]!;
  assert.equal(listed.title, `List Directory (MCP ${SERVER})`);
  assert.equal(listed.kind, "read");
  assert.equal(textOf(server, sessionId, "l1"), "[FILE] a.txt");

  assert.equal(outcome(server, sessionId, "r1").status, "completed");
  assert.equal(textOf(server, sessionId, "r1"), "alpha\n");
  assert.deepEqual(outcome(server, sessionId, "r1").rawOutput, { content: "alpha\n" });

  // The server refuses paths outside its root: the call fails with its message.
  const refused = outcome(server, sessionId, "r2");
  assert.equal(refused.status, "failed");
  assert.match(textOf(server, sessionId, "r2"), /Access denied - path outside allowed directories/);

  assert.equal(toolUpdates(server, sessionId, "w1")[0]!.kind, "delete", "destructiveHint");
  for (const id of ["w1", "w2"]) assert.equal(outcome(server, sessionId, id).status, "completed");
  assert.equal(await readFile(join(cwd, "a.txt"), "utf8"), "changed\n");
  assert.equal(await readFile(join(cwd, "b.txt"), "utf8"), "beta\n");
  // A relative path is resolved against the server's root.
  assert.equal(textOf(server, sessionId, "r3"), "beta\n");
  assert.deepEqual(server.client.problems, []);
});

Deno.test("ask mode: the filesystem server's writes ask; its read-only tools do not", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-files-");
  const cwd = await dirs.make();
  const file = join(cwd, "a.txt");
  await writeFile(file, "alpha\n");
  await using session = await start(cwd, "ask", [
    {
      toolCalls: [
        { id: "r1", name: tool("read_text_file"), arguments: { path: file } },
        { id: "l1", name: tool("list_directory"), arguments: { path: cwd } },
        { id: "w1", name: tool("write_file"), arguments: { path: file, content: "refused\n" } },
      ],
    },
    { text: "it was refused" },
    {
      toolCalls: [
        { id: "w2", name: tool("write_file"), arguments: { path: file, content: "allowed\n" } },
        { id: "d1", name: tool("create_directory"), arguments: { path: join(cwd, "sub") } },
      ],
    },
    { text: "done" },
  ], ["reject_once", "allow_once", "allow_once"]);
  const { server, sessionId, asked, questions } = session;

  assert.equal(await server.client.prompt(sessionId, "read, then write"), "end_turn");
  // readOnlyHint: true → read effect → no question; write_file is not read-only → asked.
  assert.deepEqual(asked, ["w1"]);
  assert.equal(questions[0]!.kind, "delete");
  for (const id of ["r1", "l1"]) assert.equal(outcome(server, sessionId, id).status, "completed");
  assert.equal(outcome(server, sessionId, "w1").status, "failed");
  assert.equal(await readFile(file, "utf8"), "alpha\n", "the refused write did not happen");

  assert.equal(await server.client.prompt(sessionId, "write now"), "end_turn");
  assert.deepEqual(asked.toSorted(), ["d1", "w1", "w2"]);
  // create_directory is neither read-only nor destructive: kind other, still asked.
  assert.equal(questions[asked.indexOf("d1")]!.kind, "other");
  for (const id of ["w2", "d1"]) assert.equal(outcome(server, sessionId, id).status, "completed");
  assert.equal(await readFile(file, "utf8"), "allowed\n");
  assert.deepEqual(server.client.problems, []);
});

Deno.test("read-only mode: the filesystem server's reads run, its writes are refused unasked", async () => {
  await using dirs = new TempDirs("acp-harness-mcp-files-");
  const cwd = await dirs.make();
  const file = join(cwd, "a.txt");
  await writeFile(file, "alpha\n");
  await using session = await start(cwd, "read-only", [
    {
      toolCalls: [
        { id: "r1", name: tool("read_text_file"), arguments: { path: file } },
        { id: "w1", name: tool("write_file"), arguments: { path: file, content: "x" } },
      ],
    },
    { text: "done" },
  ]);
  const { server, sessionId, asked } = session;
  assert.equal(await server.client.prompt(sessionId, "try"), "end_turn");
  assert.deepEqual(asked, []);
  assert.equal(textOf(server, sessionId, "r1"), "alpha\n");
  const refused = outcome(server, sessionId, "w1");
  assert.equal(refused.status, "failed");
  assert.match(textOf(server, sessionId, "w1"), /read-only permission mode refused .*not marked/);
  assert.equal(await readFile(file, "utf8"), "alpha\n");
  assert.deepEqual(server.client.problems, []);
});
