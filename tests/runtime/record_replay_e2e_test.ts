/**
 * Record and replay end to end (issue 31): a session recorded with `--record` against the fake
 * OpenAI-compatible and Anthropic servers (streaming, reasoning, a tool call, usage, a 429 that is
 * retried) replays with `--replay` in another directory, with the fake server stopped and no key
 * set, and the client sees the same updates (ids and paths aside) on Deno, Node and Bun. No
 * recorded file holds the key; a changed prompt is a `replay-miss` naming the first field that
 * differs; `acp-harness run --replay` answers as a CI job would.
 *
 * @module
 */
import assert from "node:assert/strict";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { RpcError, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { jsonResponse, startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { anthropicTurn, openAiTurn } from "../_helpers/llm_fixtures.ts";
import { ROOT, type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";

const KEY = "sk-recorded-secret-0123456789";

type Api = "openai-chat" | "anthropic-messages";

/** A workspace with a file to read and a config naming the fake provider. */
async function workspace(dirs: TempDirs, api: Api, baseUrl: string) {
  const base = await dirs.make();
  const cwd = join(base, "project");
  await mkdir(cwd);
  await writeFile(join(cwd, "a.txt"), "alpha\n");
  const config = join(base, "config.json");
  await writeFile(
    config,
    JSON.stringify({
      providers: { fake: { api, baseUrl, apiKeyEnv: "FAKE_API_KEY" } },
      models: { "fake/coder": { contextWindow: 32_000, pricing: { input: 1, output: 2 } } },
    }),
  );
  return { base, cwd, config };
}

/** The environment without any provider key, plus `extra`. */
function envWith(extra: Record<string, string>): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.FAKE_API_KEY;
  return { ...env, ...extra };
}

async function start(
  runtime: Runtime,
  where: { base: string; cwd: string; config: string },
  flags: string[],
  env: Record<string, string>,
): Promise<StdioAgent> {
  const agent = spawnAgent(runtime.command, [
    ...runtime.args,
    "--config",
    where.config,
    "--model",
    "fake/coder",
    "--mode",
    "auto",
    "--data-dir",
    join(where.base, "data"),
    ...flags,
  ], { cwd: where.cwd, env: envWith(env) });
  await agent.client.initialize();
  return agent;
}

async function stop(agent: StdioAgent): Promise<void> {
  agent.end();
  await agent.exited;
}

/** The session's updates with what varies by run replaced: message ids, times, the workspace's path. */
function comparable(agent: StdioAgent, sessionId: string, cwd: string): unknown[] {
  return agent.client.updates(sessionId).map(({ update }) =>
    JSON.parse(
      JSON.stringify(update)
        .replaceAll(cwd, "<cwd>")
        .replace(/"messageId":"[^"]+"/g, '"messageId":"<id>"')
        .replace(/"updatedAt":"[^"]+"/g, '"updatedAt":"<time>"'),
    )
  );
}

/** The fake server's answers for one turn: a 429 first, then a read, then the answer. */
function answers(api: Api) {
  const limited = jsonResponse(429, { error: { message: "slow down" } }, { "retry-after-ms": "5" });
  return api === "openai-chat"
    ? [
      limited,
      openAiTurn({
        reasoning: ["I should read it."],
        toolCalls: [{ id: "call_r1", name: "read_file", arguments: { path: "a.txt" } }],
        usage: { prompt: 900, completion: 40, reasoning: 10 },
      }),
      openAiTurn({ text: ["It says ", "alpha."], usage: { prompt: 1000, completion: 8 } }),
    ]
    : [
      limited,
      anthropicTurn({
        thinking: { text: "I should read it.", signature: "sig" },
        toolUse: { id: "toolu_r1", name: "read_file", input: { path: "a.txt" } },
      }),
      anthropicTurn({ text: "It says alpha." }),
    ];
}

async function recordThenReplay(runtime: Runtime, api: Api, dirs: TempDirs): Promise<void> {
  await using fake = await startFakeLlmServer();
  const baseUrl = api === "openai-chat" ? `${fake.url}/v1` : fake.url;
  const recorded = await workspace(dirs, api, baseUrl);
  const cassette = join(recorded.base, "cassette");
  fake.enqueue(...answers(api));
  const recorder = await start(runtime, recorded, ["--record", cassette], { FAKE_API_KEY: KEY });
  const first = await recorder.client.newSession(recorded.cwd);
  assert.equal(await recorder.client.prompt(first, "What does a.txt say?"), "end_turn");
  const live = comparable(recorder, first, recorded.cwd);
  await stop(recorder);
  assert.equal(fake.requests.length, 3, "the 429, the read, the answer");
  await fake.close();

  // The cassette: an index and one readable file per exchange, no key anywhere.
  const files = (await readdir(cassette)).sort();
  assert.equal(files.length, 4, files.join(", "));
  assert.ok(files.includes("index.json"));
  for (const file of files) {
    const text = await readFile(join(cassette, file), "utf8");
    assert.ok(!text.includes(KEY), `${file} holds the key`);
    assert.ok(!text.includes(recorded.cwd), `${file} holds the workspace's path`);
    assert.ok(!/authorization|x-api-key/i.test(text), `${file} holds a credential header`);
  }
  const index = JSON.parse(await readFile(join(cassette, "index.json"), "utf8"));
  assert.deepEqual(index.sessions[first], index.exchanges);
  const limited = JSON.parse(await readFile(join(cassette, index.exchanges[0]), "utf8"));
  assert.equal(limited.response.status, 429);

  // Replayed in another directory, the server gone, no key set: the same updates.
  const replayed = await workspace(dirs, api, baseUrl);
  const replayer = await start(runtime, replayed, ["--replay", cassette], {});
  const second = await replayer.client.newSession(replayed.cwd);
  assert.equal(await replayer.client.prompt(second, "What does a.txt say?"), "end_turn");
  assert.deepEqual(comparable(replayer, second, replayed.cwd), live, runtime.name);
  assert.deepEqual(replayer.client.problems, []);

  // A changed prompt matches nothing: the turn fails naming where the request differs.
  const third = await replayer.client.newSession(replayed.cwd);
  await assert.rejects(replayer.client.prompt(third, "What does b.txt say?"), (error: unknown) => {
    assert.ok(error instanceof RpcError, String(error));
    assert.match(error.message, /no recorded response matches POST \//);
    assert.match(error.message, /differs first at messages\[\d+\]\.content/);
    return true;
  });
  await stop(replayer);
}

for (const runtime of RUNTIMES) {
  Deno.test(`--record then --replay elsewhere, offline and keyless: the same updates (OpenAI, ${runtime.name})`, async () => {
    await using dirs = new TempDirs("acp-harness-replay-");
    await recordThenReplay(runtime, "openai-chat", dirs);
  });
}

Deno.test("--record then --replay elsewhere, offline and keyless: the same updates (Anthropic, node)", async () => {
  await using dirs = new TempDirs("acp-harness-replay-");
  await recordThenReplay(
    RUNTIMES.find((runtime) => runtime.name === "node") as Runtime,
    "anthropic-messages",
    dirs,
  );
});

Deno.test("acp-harness run --replay --json answers from the cassette; a miss exits 1 naming it", async () => {
  await using dirs = new TempDirs("acp-harness-replay-");
  await using fake = await startFakeLlmServer();
  const where = await workspace(dirs, "openai-chat", `${fake.url}/v1`);
  const cassette = join(where.base, "cassette");
  fake.enqueue(...answers("openai-chat"));
  const run = async (flags: string[], env: Record<string, string>, cwd = where.cwd) => {
    const output = await new Deno.Command("node", {
      args: [
        join(ROOT, "dist/cli.js"),
        "run",
        "--ephemeral",
        "--json",
        "--config",
        where.config,
        "--model",
        "fake/coder",
        "--mode",
        "auto",
        ...flags,
      ],
      cwd,
      env: envWith(env),
      clearEnv: true,
      stdin: "null",
      signal: AbortSignal.timeout(60_000),
    }).output();
    const stdout = new TextDecoder().decode(output.stdout);
    return {
      code: output.code,
      document: stdout === "" ? undefined : JSON.parse(stdout),
      stderr: new TextDecoder().decode(output.stderr),
    };
  };
  const recorded = await run(["--record", cassette, "What does a.txt say?"], { FAKE_API_KEY: KEY });
  assert.equal(recorded.code, 0, recorded.stderr);
  assert.equal(recorded.document.text, "It says alpha.");
  const sent = fake.requests.length;
  // A changed prompt misses, and nothing reaches the provider, although it is up.
  const missed = await run(["--replay", cassette, "Something else"], {});
  assert.equal(missed.code, 1, missed.stderr);
  assert.match(missed.document.error, /Replay: no recorded response matches/);
  assert.equal(fake.requests.length, sent);
  // --record-missing sends what misses, with the key, and adds it to the cassette.
  fake.enqueue(openAiTurn({ text: ["Something, recorded."] }));
  const added = await run(
    ["--replay", cassette, "--record-missing", "Something else"],
    { FAKE_API_KEY: KEY },
  );
  assert.equal(added.code, 0, added.stderr);
  assert.equal(fake.requests.length, sent + 1);
  await fake.close();
  const elsewhere = await workspace(dirs, "openai-chat", `${fake.url}/v1`);
  const replayed = await run(["--replay", cassette, "What does a.txt say?"], {}, elsewhere.cwd);
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.equal(replayed.document.text, "It says alpha.");
  assert.deepEqual(replayed.document.toolCalls, recorded.document.toolCalls);
  assert.deepEqual(replayed.document.usage, recorded.document.usage);
  const again = await run(["--replay", cassette, "Something else"], {}, elsewhere.cwd);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.document.text, "Something, recorded.");
  for (const file of await readdir(cassette)) {
    assert.ok(!(await readFile(join(cassette, file), "utf8")).includes(KEY), file);
  }
  const none = await run(["--replay", join(where.base, "nothing-here"), "hi"], {});
  assert.equal(none.code, 2);
  assert.match(none.stderr, /--replay ".*nothing-here": no cassette/);
});
