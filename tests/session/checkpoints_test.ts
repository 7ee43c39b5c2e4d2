/**
 * Checkpoints and undo, through the protocol: real files, real git, a JSONL store, the scripted
 * model.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { NodeHost } from "../../src/host/node_host.ts";
import { createLogger } from "../../src/log/logger.ts";
import { DEFAULT_SERVER_SETTINGS } from "../../src/server/server_settings.ts";
import { SessionCheckpoints } from "../../src/session/checkpoints.ts";
import { Conversation } from "../../src/session/conversation.ts";
import type { Outbox } from "../../src/session/outbox.ts";
import type { StoredEvent } from "../../src/store/session_store.ts";
import { type StartOptions, startServer } from "../_helpers/server.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { pollUntil } from "../_helpers/wait.ts";
import type { AcpTestClient } from "../_helpers/acp_client.ts";

const host = new NodeHost();

function call(id: string, name: string, args: Record<string, unknown>): unknown {
  return { toolCalls: [{ id, name, arguments: args }] };
}

function options(
  dataDir: string,
  script: unknown[],
  extra: Partial<StartOptions> = {},
): StartOptions {
  return {
    config: { model: "scripted", mode: "auto" },
    script,
    dataDir,
    serverDataDir: true,
    ...extra,
  };
}

/** The text of the last agent message chunk of a session. */
function lastReply(client: AcpTestClient, sessionId: string): string {
  const chunks = client.updates(sessionId).filter(({ update }) =>
    update.sessionUpdate === "agent_message_chunk"
  );
  const content = chunks.at(-1)?.update.content as { text?: string } | undefined;
  return content?.text ?? "";
}

async function command(client: AcpTestClient, sessionId: string, text: string): Promise<string> {
  assert.equal(await client.prompt(sessionId, text), "end_turn");
  return lastReply(client, sessionId);
}

async function read(path: string): Promise<string | undefined> {
  return (await host.stat(path)) ? await host.readTextFile(path) : undefined;
}

describe("checkpoints", () => {
  it("/undo walks back write_file, edit_file, rm and created files, turn by turn", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    await host.writeFileAtomic(`${cwd}/keep.txt`, "keep\n");
    await host.writeFileAtomic(`${cwd}/edit.txt`, "old line\n");
    const script = [
      call("w1", "write_file", { path: "new.txt", content: "new" }),
      call("e1", "edit_file", { path: "edit.txt", old_text: "old", new_text: "new" }),
      { text: "edited" },
      call("r1", "run_command", { command: "rm keep.txt" }),
      { text: "removed" },
      call("c1", "run_command", { command: "mkdir -p out/deep && echo x > out/deep/made.txt" }),
      { text: "made" },
    ];
    const server = startServer(options(data.path, script));
    const { client } = server;
    await client.initialize();
    const sessionId = await client.newSession(cwd);
    await client.waitForUpdate(sessionId, "available_commands_update");
    const advertised = client.updates(sessionId).find(({ update }) =>
      update.sessionUpdate === "available_commands_update"
    );
    const names = (advertised?.update.availableCommands as Array<{ name: string }>).map((c) =>
      c.name
    );
    for (const name of ["checkpoints", "undo", "restore"]) assert.ok(names.includes(name), name);

    assert.match(await command(client, sessionId, "/undo"), /Nothing to undo: no checkpoint yet/);
    assert.equal(await client.prompt(sessionId, "write and edit"), "end_turn");
    assert.equal(await client.prompt(sessionId, "remove keep"), "end_turn");
    assert.equal(await client.prompt(sessionId, "make files"), "end_turn");
    assert.equal(await read(`${cwd}/out/deep/made.txt`), "x\n");

    const listed = await command(client, sessionId, "/checkpoints");
    assert.match(listed, /^Checkpoints/);
    assert.match(listed, /1\. .* "write and edit" \(first\)/);
    assert.match(listed, /2\. .* "remove keep" \(2 files changed\)/);
    assert.match(listed, /3\. .* "make files" \(1 file changed\)/);

    const first = await command(client, sessionId, "/undo");
    assert.match(first, /Restored the files to checkpoint 3/);
    assert.match(first, /Removed: out\/deep\/made\.txt/);
    assert.equal(await host.stat(`${cwd}/out`), undefined);
    assert.match(first, /Checkpoint 4 holds the files as they were: \/restore 4/);

    const second = await command(client, sessionId, "/undo");
    assert.match(second, /checkpoint 2/);
    assert.match(second, /Written back: keep\.txt/);
    assert.equal(await read(`${cwd}/keep.txt`), "keep\n");

    const third = await command(client, sessionId, "/undo");
    assert.match(third, /checkpoint 1/);
    assert.equal(await read(`${cwd}/new.txt`), undefined);
    assert.equal(await read(`${cwd}/edit.txt`), "old line\n");
    assert.match(await command(client, sessionId, "/undo"), /Nothing to undo/);

    // Back to the state before the first /undo.
    assert.match(await command(client, sessionId, "/restore 9"), /from 1 to 6/);
    assert.match(await command(client, sessionId, "/restore 4"), /checkpoint 4/);
    assert.equal(await read(`${cwd}/out/deep/made.txt`), "x\n");
    assert.equal(await read(`${cwd}/new.txt`), "new");
    assert.equal(await read(`${cwd}/keep.txt`), undefined);
    assert.deepEqual(client.problems, []);
    await server.disconnect();
  });

  it("tells the model of a restore, and session/load replays the notes and keeps the checkpoints", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    const script = [
      call("w1", "write_file", { path: "a.txt", content: "1" }),
      { text: "wrote" },
      { text: "ok" },
    ];
    const first = startServer(options(data.path, script));
    await first.client.initialize();
    const sessionId = await first.client.newSession(cwd);
    assert.equal(await first.client.prompt(sessionId, "write a"), "end_turn");
    const undone = await command(first.client, sessionId, "/undo");
    assert.match(undone, /Removed: a\.txt/);
    assert.deepEqual(first.client.problems, []);
    await first.disconnect();

    const second = startServer(options(data.path, script));
    await second.client.initialize();
    await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
    const replayed = second.client.updates(sessionId).map(({ update }) => update);
    const texts = replayed.map((update) => (update.content as { text?: string } | undefined)?.text);
    assert.ok(texts.includes("/undo"), "the command is replayed as the user's message");
    assert.ok(texts.includes(undone), "the reply is replayed");
    const listed = await command(second.client, sessionId, "/checkpoints");
    assert.match(listed, /1\. .* "write a" \(first\)/);
    assert.match(listed, /2\. .* before \/undo \(1 file changed\)/);
    assert.match(await command(second.client, sessionId, "/restore 2"), /checkpoint 2/);
    assert.equal(await read(`${cwd}/a.txt`), "1");
    assert.deepEqual(second.client.problems, []);
    await second.disconnect();

    // The model's conversation holds the notices: the session's log has them.
    const log = await host.readTextFile(`${data.path}/sessions/${sessionId}.jsonl`).catch(() =>
      undefined
    );
    if (log !== undefined) assert.match(log, /files_restored/);
  });

  it("keeps the checkpoint of a turn cancelled mid-way: load, then /undo", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    await host.writeFileAtomic(`${cwd}/a.txt`, "before");
    const script = [
      call("c1", "run_command", { command: "echo after > a.txt && sleep 30" }),
      { text: "never" },
    ];
    const first = startServer(options(data.path, script));
    await first.client.initialize();
    const sessionId = await first.client.newSession(cwd);
    const prompt = first.client.prompt(sessionId, "change a");
    await first.client.waitFor(() =>
      first.client.updates(sessionId).some(({ update }) => update.status === "in_progress")
    );
    // The command (another program) writes the file: polled, there is no event for it.
    await pollUntil(async () => (await read(`${cwd}/a.txt`)) === "after\n", {
      what: "the command changed a.txt",
    });
    await first.client.notify("session/cancel", { sessionId });
    assert.equal(await prompt, "cancelled");
    await first.disconnect();

    const second = startServer(options(data.path, script));
    await second.client.initialize();
    await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
    const undone = await command(second.client, sessionId, "/undo");
    assert.match(undone, /checkpoint 1/);
    assert.equal(await read(`${cwd}/a.txt`), "before");
    assert.deepEqual(second.client.problems, []);
    await second.disconnect();
  });

  it("offers no checkpoint commands with --checkpoints off, nor without a data directory", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    for (
      const extra of [
        { config: { model: "scripted", mode: "auto", checkpoints: false } },
        { serverDataDir: false },
      ] as Partial<StartOptions>[]
    ) {
      const server = startServer(options(data.path, [{ text: "plain" }], extra));
      await server.client.initialize();
      const sessionId = await server.client.newSession(work.path);
      await server.client.waitForUpdate(sessionId, "available_commands_update");
      const advertised = server.client.updates(sessionId).find(({ update }) =>
        update.sessionUpdate === "available_commands_update"
      );
      const names = (advertised?.update.availableCommands as Array<{ name: string }>).map((c) =>
        c.name
      );
      assert.equal(names.includes("undo"), false);
      await server.disconnect();
    }
    assert.equal(await host.stat(`${data.path}/checkpoints`), undefined);
  });

  it("/undo after a turn that put a file back undoes that turn, then goes on turn by turn", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    await host.writeFileAtomic(`${cwd}/f.txt`, "v0");
    const script = [
      call("w1", "write_file", { path: "f.txt", content: "v1" }),
      { text: "one" },
      call("w2", "write_file", { path: "f.txt", content: "v2" }),
      { text: "two" },
      call("w3", "write_file", { path: "f.txt", content: "v1" }),
      { text: "three" },
    ];
    const first = startServer(options(data.path, script));
    await first.client.initialize();
    const sessionId = await first.client.newSession(cwd);
    for (const text of ["to v1", "to v2", "back to v1"]) {
      assert.equal(await first.client.prompt(sessionId, text), "end_turn");
    }
    assert.match(await command(first.client, sessionId, "/undo"), /checkpoint 3/);
    assert.equal(await read(`${cwd}/f.txt`), "v2");
    assert.match(await command(first.client, sessionId, "/undo"), /checkpoint 2/);
    assert.equal(await read(`${cwd}/f.txt`), "v1");
    assert.deepEqual(first.client.problems, []);
    await first.disconnect();

    // The log says where the last /undo went: the next one goes on from there.
    const second = startServer(options(data.path, script));
    await second.client.initialize();
    await second.client.request("session/load", { sessionId, cwd, mcpServers: [] });
    assert.match(await command(second.client, sessionId, "/undo"), /checkpoint 1/);
    assert.equal(await read(`${cwd}/f.txt`), "v0");
    assert.match(await command(second.client, sessionId, "/undo"), /Nothing to undo/);
    assert.deepEqual(second.client.problems, []);
    await second.disconnect();
  });

  it("/undo after two turns that ended where they began undoes the last one", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    await host.writeFileAtomic(`${cwd}/f.txt`, "v0");
    const script = [
      call("w1", "write_file", { path: "f.txt", content: "v1" }),
      { text: "one" },
      call("w2", "write_file", { path: "f.txt", content: "v0" }),
      { text: "two" },
    ];
    const server = startServer(options(data.path, script));
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd);
    assert.equal(await server.client.prompt(sessionId, "to v1"), "end_turn");
    assert.equal(await server.client.prompt(sessionId, "back to v0"), "end_turn");
    assert.match(await command(server.client, sessionId, "/undo"), /checkpoint 2/);
    assert.equal(await read(`${cwd}/f.txt`), "v1");
    assert.deepEqual(server.client.problems, []);
    await server.disconnect();
  });

  it("a fork restores the checkpoints it copied; once their store is gone it says so and changes nothing", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    await host.writeFileAtomic(`${cwd}/f.txt`, "v0");
    const script = [
      call("w1", "write_file", { path: "f.txt", content: "v1" }),
      { text: "one" },
    ];
    const server = startServer(options(data.path, script));
    const { client } = server;
    await client.initialize();
    const source = await client.newSession(cwd);
    assert.equal(await client.prompt(source, "to v1"), "end_turn");
    const fork = async (): Promise<string> =>
      (await client.request<{ sessionId: string }>("session/fork", {
        sessionId: source,
        cwd,
        mcpServers: [],
      })).sessionId;
    const one = await fork();
    assert.match(await command(client, one, "/checkpoints"), /1\. .*"to v1"/);
    assert.match(await command(client, one, "/undo"), /Restored the files to checkpoint 1/);
    assert.equal(await read(`${cwd}/f.txt`), "v0");

    await host.writeFileAtomic(`${cwd}/f.txt`, "v1");
    const two = await fork();
    await host.remove(`${data.path}/checkpoints/${source}`);
    const reply = await command(client, two, "/undo");
    assert.match(reply, /^Not restored: .*not in this session's checkpoint store/);
    assert.doesNotMatch(reply, /Restored|holds the files/);
    assert.equal(await read(`${cwd}/f.txt`), "v1");
    const listed = await command(client, two, "/checkpoints");
    assert.doesNotMatch(
      listed,
      /before \/undo/,
      "no checkpoint recorded for a restore that did nothing",
    );
    assert.deepEqual(client.problems, []);
    await server.disconnect();
    const log = await host.readTextFile(`${data.path}/sessions/${two}.jsonl`).catch(() =>
      undefined
    );
    if (log !== undefined) assert.doesNotMatch(log, /files_restored/, "the model is not told");
  });

  it("never records nor restores a data directory inside the cwd named through a symlink", async () => {
    await using base = await tempDir("acp-harness-ckpt-alias-");
    const cwd = `${base.path}/real`;
    await host.mkdir(cwd);
    await Deno.symlink(cwd, `${base.path}/alias`);
    const dataDir = `${base.path}/alias/.data`;
    await host.mkdir(dataDir);
    const script = [
      call("w1", "write_file", { path: "f.txt", content: "v1" }),
      { text: "one" },
    ];
    const server = startServer(options(dataDir, script));
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd);
    assert.equal(await server.client.prompt(sessionId, "write"), "end_turn");
    const reply = await command(server.client, sessionId, "/undo");
    assert.match(reply, /Removed: f\.txt\./);
    assert.doesNotMatch(reply, /\.data\/|Not restored/);
    assert.equal(await read(`${cwd}/f.txt`), undefined);
    await server.disconnect();
  });

  it("keeps checkpoints on through a directory replaced by a symlink and back", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    await using elsewhere = await tempDir("acp-harness-ckpt-else-");
    const cwd = work.path;
    await host.writeFileAtomic(`${elsewhere.path}/x`, "outside\n");
    const script = [
      call("c1", "run_command", { command: "mkdir d && echo x > d/x" }),
      { text: "one" },
      call("c2", "run_command", { command: `rm -rf d && ln -s ${elsewhere.path} d` }),
      { text: "two" },
      call("c3", "run_command", { command: "rm d" }),
      { text: "three" },
      call("w4", "write_file", { path: "f.txt", content: "four" }),
      { text: "four" },
    ];
    const server = startServer(options(data.path, script));
    const { client } = server;
    await client.initialize();
    const sessionId = await client.newSession(cwd);
    for (const text of ["make d", "link d", "unlink d", "write f"]) {
      assert.equal(await client.prompt(sessionId, text), "end_turn");
    }
    const listed = await command(client, sessionId, "/checkpoints");
    assert.match(listed, /4\. .*"write f"/);
    const reply = await command(client, sessionId, "/undo");
    assert.match(reply, /checkpoint 4/);
    assert.equal(await read(`${cwd}/f.txt`), undefined);
    // Back before the link: the directory is a directory again, what it pointed to untouched.
    assert.match(await command(client, sessionId, "/restore 2"), /checkpoint 2/);
    assert.equal(await read(`${cwd}/d/x`), "x\n");
    assert.equal((await Deno.lstat(`${cwd}/d`)).isDirectory, true);
    assert.equal(await read(`${elsewhere.path}/x`), "outside\n");
    assert.deepEqual(client.problems, []);
    await server.disconnect();
  });

  it("a checkpoint that fails is skipped: the turn runs, the next turn takes one again", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    const script = [
      call("w1", "write_file", { path: "a.txt", content: "a" }),
      { text: "one" },
      call("w2", "write_file", { path: "b.txt", content: "b" }),
      { text: "two" },
      call("w3", "write_file", { path: "c.txt", content: "c" }),
      { text: "three" },
    ];
    const server = startServer(options(data.path, script));
    const { client } = server;
    await client.initialize();
    const sessionId = await client.newSession(cwd);
    assert.equal(await client.prompt(sessionId, "write a"), "end_turn");
    // The store is not there for one turn (a file where it was): that turn's checkpoint fails.
    const store = `${data.path}/checkpoints/${sessionId}`;
    await host.rename(store, `${store}.away`);
    await host.writeFileAtomic(store, "not a store");
    assert.equal(await client.prompt(sessionId, "write b"), "end_turn");
    assert.equal(await read(`${cwd}/b.txt`), "b");
    await host.remove(store);
    await host.rename(`${store}.away`, store);
    assert.equal(await client.prompt(sessionId, "write c"), "end_turn");
    const listed = await command(client, sessionId, "/checkpoints");
    assert.match(listed, /1\. .*"write a"/);
    assert.match(listed, /2\. .*"write c"/);
    assert.doesNotMatch(listed, /"write b"|3\./);
    assert.match(await command(client, sessionId, "/undo"), /checkpoint 2[^]*Removed: c\.txt/);
    assert.equal(await read(`${cwd}/b.txt`), "b");
    assert.match(await command(client, sessionId, "/undo"), /checkpoint 1/);
    assert.equal(await read(`${cwd}/a.txt`), undefined);
    assert.deepEqual(client.problems, []);
    await server.disconnect();
  });
});

describe("SessionCheckpoints and a store that does not acknowledge", () => {
  it("lists no checkpoint the store did not take, and restores nothing before the store has one", async () => {
    await using data = await tempDir("acp-harness-data-");
    await using work = await tempDir("acp-harness-ckpt-work-");
    const cwd = work.path;
    await host.writeFileAtomic(`${cwd}/f.txt`, "v0");
    const recorded: StoredEvent[] = [];
    let failing = true;
    const outbox = {
      record(events: readonly StoredEvent[]): void {
        recorded.push(...events);
      },
      acknowledged(): Promise<void> {
        return failing ? Promise.reject(new Error("disk full")) : Promise.resolve();
      },
    } as unknown as Outbox;
    const warnings: string[] = [];
    const conversation = new Conversation();
    const checkpoints = new SessionCheckpoints({
      services: {
        host,
        dataDir: data.path,
        settings: DEFAULT_SERVER_SETTINGS,
        now: () => host.now(),
      },
      sessionId: "s1",
      roots: [cwd],
      outbox,
      conversation,
      logger: createLogger("warn", (line) => warnings.push(line)),
    });
    const signal = new AbortController().signal;
    const turn = (text: string): Promise<void> =>
      checkpoints.turnHook([{ type: "text", text }])?.(signal) ?? Promise.resolve();

    await turn("not kept");
    assert.match(await checkpoints.list(signal), /No checkpoints yet/);
    assert.match(warnings.join(""), /did not record a checkpoint/);

    failing = false;
    await turn("kept");
    assert.match(await checkpoints.list(signal), /^Checkpoints[^]*1\. .*"kept" \(first\)$/);
    await host.writeFileAtomic(`${cwd}/f.txt`, "v1");

    failing = true;
    const reply = await checkpoints.undo(signal);
    assert.match(reply, /^Not restored: .*could not be kept first/);
    assert.equal(await host.readTextFile(`${cwd}/f.txt`), "v1");
    assert.equal(conversation.messages.length, 0, "the model is not told");
    assert.equal(recorded.some((event) => event.type === "files_restored"), false);

    failing = false;
    assert.match(await checkpoints.undo(signal), /^Restored the files to checkpoint 1/);
    assert.equal(await host.readTextFile(`${cwd}/f.txt`), "v0");
    assert.equal(conversation.messages.length, 1);
  });
});
