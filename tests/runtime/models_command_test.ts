/**
 * The command line's `models` command, `--help` and its error messages, run as real processes
 * (issue 7, defect 9).
 *
 * @module
 */
import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { spawnAgent } from "../_helpers/acp_client.ts";
import { type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

/** The test process's environment without anything that configures a provider or the server. */
function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(Deno.env.toObject())) {
    if (/^(ACP_HARNESS_|OPENAI_|ANTHROPIC_|DEEPSEEK_|OLLAMA_)/.test(name)) continue;
    env[name] = value;
  }
  return env;
}

interface Run {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

async function run(
  runtime: Runtime,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Run> {
  const output = await new Deno.Command(runtime.command, {
    args: [...runtime.args, ...args],
    env: { ...cleanEnv(), ...env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

/** A fake Ollama on loopback listing two models. */
function fakeOllama(): { host: string; close(): Promise<void> } {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    if (new URL(request.url).pathname !== "/api/tags") return new Response("no", { status: 404 });
    return Response.json({
      models: [{ name: "qwen3-coder:latest" }, { name: "llama3.2:3b" }],
    });
  });
  return { host: `127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: models lists the preset and Ollama models and which can be used`, async () => {
    const ollama = fakeOllama();
    try {
      const env = { OPENAI_API_KEY: "sk-test-key", OLLAMA_HOST: ollama.host };
      const table = await run(runtime, ["models"], env);
      assert.equal(table.code, 0, table.stderr);
      assert.equal(table.stderr, "");
      const rows = table.stdout.trimEnd().split("\n");
      assert.match(rows[0] ?? "", /^MODEL +PROVIDER +USABLE +CONTEXT/);
      const row = (id: string): string => rows.find((line) => line.startsWith(`${id} `)) ?? "";
      assert.match(row("echo"), / yes .*default$/);
      assert.match(row("openai/gpt-5"), /^openai\/gpt-5 +openai +yes +400k/);
      assert.match(row("ollama/qwen3-coder"), /^ollama\/qwen3-coder +ollama +yes/);
      assert.match(row("ollama/llama3.2:3b"), / yes /);
      assert.match(row("anthropic/claude-sonnet-5-5"), / no .*ANTHROPIC_API_KEY is not set$/);
      assert.doesNotMatch(table.stdout, /sk-test-key/);

      const json = await run(runtime, ["models", "--json"], env);
      assert.equal(json.code, 0, json.stderr);
      const parsed = JSON.parse(json.stdout) as {
        models: Array<{ id: string; available: boolean; offered: boolean; default: boolean }>;
        discovery: Array<{ provider: string; models?: string[] }>;
      };
      const byId = new Map(parsed.models.map((model) => [model.id, model]));
      assert.equal(byId.get("echo")?.default, true);
      assert.equal(byId.get("openai/gpt-5")?.available, true);
      assert.equal(byId.get("ollama/qwen3-coder")?.offered, true);
      assert.equal(byId.get("scripted")?.available, false);
      assert.deepEqual(parsed.discovery.map((result) => result.models), [[
        "ollama/qwen3-coder",
        "ollama/llama3.2:3b",
      ]]);
    } finally {
      await ollama.close();
    }
  });

  Deno.test(`${runtime.name}: --help lines up its columns`, async () => {
    const help = await run(runtime, ["--help"]);
    assert.equal(help.code, 0);
    const entries = help.stdout.split("\n").filter((line) => /^ {2}(-|models)/.test(line));
    assert.ok(entries.length >= 12);
    const columns = new Set(
      entries.map((line) => /^ {2}\S.*?\S {2,}(?=\S)/.exec(line)?.[0].length),
    );
    assert.equal(columns.size, 1, help.stdout);
  });
}

Deno.test("deno: usage errors name the accepted values, the file and the position", async () => {
  const [deno] = RUNTIMES;
  assert.ok(deno);
  await using temp = await tempDir("acp-harness-cli-");
  const dir = temp.path;
  const syntax = join(dir, "syntax.json");
  await writeFile(syntax, '[\n  { "text": "hi", }\n]\n');
  const schema = join(dir, "schema.json");
  await writeFile(schema, JSON.stringify([{ text: "ok" }, { toolCalls: [{ name: 5 }] }]));
  const cases: Array<[string[], Record<string, string>, string]> = [
    [
      [],
      { ACP_HARNESS_STREAM: "banana" },
      'acp-harness: ACP_HARNESS_STREAM: Invalid value "banana" for "ACP_HARNESS_STREAM": ' +
      "expected one of true, false, 1, 0, yes, no, on, off",
    ],
    [
      ["--stream=maybe"],
      {},
      'acp-harness: Invalid value "maybe" for "--stream": expected one of true, false, 1, 0, ' +
      "yes, no, on, off",
    ],
    [
      ["--script", syntax],
      {},
      `acp-harness: Cannot parse "${syntax}" as JSON: line 2, column 19: expected a string key`,
    ],
    [
      ["--script", schema],
      {},
      `acp-harness: Cannot parse script "${schema}": 1.toolCalls.0.name: `,
    ],
    [
      ["--model", "gpt-none"],
      {},
      'acp-harness: Unknown model "gpt-none": expected one of echo, scripted (with --script), ' +
      "or <provider>/<model> with provider one of openai, anthropic, deepseek, ollama",
    ],
  ];
  for (const [args, env, expected] of cases) {
    const result = await run(deno, args, env);
    assert.equal(result.code, 2, JSON.stringify(args));
    const first = result.stderr.split("\n")[0] ?? "";
    assert.ok(first.startsWith(expected), `${first}\n  does not start with\n${expected}`);
  }
  // Yes, 1 and the other listed words are accepted.
  const accepted = await run(deno, ["models"], { ACP_HARNESS_STREAM: "Yes" });
  assert.equal(accepted.code, 0, accepted.stderr);
});

Deno.test("deno: at --log-level debug a turn logs its model request with the session id", async () => {
  const [deno] = RUNTIMES;
  assert.ok(deno);
  await using temp = await tempDir("acp-harness-log-");
  const dir = temp.path;
  const env = { ...cleanEnv(), ACP_HARNESS_HOME: join(dir, "home") };
  const turn = async (level: string): Promise<{ sessionId: string; stderr: string }> => {
    const agent = spawnAgent(deno.command, [...deno.args, "--log-level", level], {
      cwd: dir,
      env,
    });
    await agent.client.initialize();
    const sessionId = await agent.client.newSession(dir);
    assert.equal(await agent.client.prompt(sessionId, "confidential prompt text"), "end_turn");
    agent.end();
    assert.equal((await agent.exited).code, 0);
    return { sessionId, stderr: agent.stderr() };
  };
  const debug = await turn("debug");
  const request = debug.stderr.split("\n").find((line) => line.includes("debug: model request "));
  assert.ok(request, debug.stderr);
  assert.ok(request.includes(`"sessionId":"${debug.sessionId}"`), request);
  assert.match(debug.stderr, /debug: model response \{.*"ms":\d+.*"finish":"stop"/);
  // Above debug, the prompt's content never reaches the log.
  const info = await turn("info");
  assert.doesNotMatch(info.stderr, /confidential/);
});
