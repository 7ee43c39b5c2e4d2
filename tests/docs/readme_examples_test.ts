/**
 * The README's examples, run as written: the Zed snippet's command, both acpx lines, the
 * example config file (with the scripted model's example script from `docs/models.md`) and the
 * GitHub Actions job's `run` steps (against the fake OpenAI server), with `/path/to/acp-harness`
 * and `npx acp-harness` replaced by this checkout. A README or guide edit that breaks one fails
 * here.
 *
 * @module
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import process from "node:process";
import { ACPX, removeAcpxSocketDir, stopAcpxProcesses } from "../_helpers/acpx.ts";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { bwrapAvailable } from "../_helpers/bwrap.ts";
import { startFakeLlmServer } from "../_helpers/fake_llm_server.ts";
import { openAiTurn } from "../_helpers/llm_fixtures.ts";
import { ROOT } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";
import { startOtlpReceiver } from "../_helpers/otlp_receiver.ts";

/** A fenced block of the README: its language and its text. */
interface Block {
  readonly lang: string;
  readonly text: string;
}

const README = await readFile(join(ROOT, "README.md"), "utf8");
const MODELS_GUIDE = await readFile(join(ROOT, "docs/models.md"), "utf8");

/** The fenced blocks of `markdown`, in order. */
function fencedBlocks(markdown: string): Block[] {
  return [...markdown.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((match) => ({
    lang: match[1] ?? "",
    text: match[2] ?? "",
  }));
}

/** The one block of `lang` in `markdown` (the README unless told) whose text includes `marker`. */
function blockWith(lang: string, marker: string, markdown = README): string {
  const found = fencedBlocks(markdown).filter((block) =>
    block.lang === lang && block.text.includes(marker)
  );
  assert.equal(found.length, 1, `one ${lang} block with ${marker}`);
  return (found[0] as Block).text;
}

/** The README's placeholder for the checkout replaced by this one (ROOT ends with a slash). */
function here(text: string): string {
  return text.replaceAll("/path/to/acp-harness/", ROOT);
}

/** The words of a shell command line with single-quoted words (all the README's lines use). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  for (const match of line.matchAll(/'([^']*)'|(\S+)/g)) words.push(match[1] ?? match[2] ?? "");
  return words;
}

Deno.test("README: the Zed snippet's command serves a session and a prompt", async () => {
  await using dir = await tempDir("acp-harness-readme-zed-");
  const snippet = JSON.parse(here(blockWith("json", '"agent_servers"'))) as {
    agent_servers: Record<
      string,
      { command: string; args: string[]; env: Record<string, string> }
    >;
  };
  const server = snippet.agent_servers["acp-harness"];
  assert.ok(server);
  const agent = spawnAgent(server.command, server.args, {
    cwd: dir.path,
    env: { ...Deno.env.toObject(), ...server.env, ACP_HARNESS_HOME: join(dir.path, "home") },
  });
  await agent.client.initialize();
  const sessionId = await agent.client.newSession(dir.path);
  assert.equal(await agent.client.prompt(sessionId, "hello from Zed"), "end_turn");
  agent.end();
  assert.equal(await exitWithin(agent, 10_000), 0);
  assert.deepEqual(agent.client.problems, []);
});

Deno.test("README: both acpx lines run as written", async () => {
  await using dir = await tempDir("acp-harness-readme-acpx-");
  const home = join(dir.path, "home");
  try {
    const lines = here(blockWith("sh", "exec 'hello'")).split("\n").filter((line) =>
      line.startsWith("acpx ")
    );
    assert.equal(lines.length, 2, "the two acpx lines");
    for (const line of lines) {
      const child = spawn(ACPX, shellWords(line).slice(1), {
        cwd: dir.path,
        env: { ...process.env, HOME: home, ACP_HARNESS_HOME: join(dir.path, "data") },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.setEncoding("utf8").on("data", (text: string) => output += text);
      child.stderr.setEncoding("utf8").on("data", (text: string) => output += text);
      const timer = setTimeout(() => child.kill("SIGKILL"), 30_000);
      const [code] = await new Promise<[number | null]>((resolve) =>
        child.on("exit", (exitCode) => resolve([exitCode]))
      );
      clearTimeout(timer);
      assert.equal(code, 0, `${line}\n${output}`);
      assert.match(output, /Echo: hello/, line);
    }
  } finally {
    await stopAcpxProcesses(home);
    await removeAcpxSocketDir(home);
  }
});

Deno.test("README: the example config file works from another directory", async () => {
  await using dir = await tempDir("acp-harness-readme-config-");
  const config = blockWith("json", '"script": "./demo-script.json"');
  const script = JSON.parse(blockWith("json", '"toolCalls"', MODELS_GUIDE)) as unknown;
  await writeFile(join(dir.path, "config.json"), config);
  await writeFile(join(dir.path, "demo-script.json"), JSON.stringify(script));
  // Started from another directory: the config names the script relative to itself.
  const elsewhere = spawnAgent(
    "node",
    [join(ROOT, "dist/cli.js"), "--config", join(dir.path, "config.json")],
    { cwd: ROOT, env: { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(dir.path, "home") } },
  );
  await elsewhere.client.initialize();
  const sessionId = await elsewhere.client.newSession(dir.path);
  assert.equal(await elsewhere.client.prompt(sessionId, "go"), "end_turn");
  elsewhere.end();
  assert.equal(await exitWithin(elsewhere, 10_000), 0, elsewhere.stderr());
  assert.deepEqual(elsewhere.client.problems, []);
});

/** The `run: |` scripts of a GitHub Actions job, in order (each its lines, unindented). */
function runScripts(yaml: string): string[] {
  const scripts: string[] = [];
  const lines = yaml.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const match = /^(\s*)- run: \|$/.exec(lines[index] ?? "");
    if (!match) continue;
    const body: string[] = [];
    const indent = (match[1] ?? "").length + 4;
    while ((lines[index + 1] ?? "").startsWith(" ".repeat(indent))) {
      body.push((lines[++index] ?? "").slice(indent));
    }
    scripts.push(body.join("\n"));
  }
  return scripts;
}

Deno.test({
  name:
    "README: the GitHub Actions job's run step works as written (sandboxed, read-only, one allow rule)",
  ignore: !bwrapAvailable(),
  fn: async () => {
    await using dir = await tempDir("acp-harness-readme-ci-");
    await using fake = await startFakeLlmServer();
    const workflow = blockWith("yaml", ".github/workflows/review.yml");
    const step = runScripts(workflow)[0] ?? "";
    assert.ok(step?.includes("npx acp-harness run"), workflow);
    // The job's checkout: a package whose tests pass.
    await writeFile(
      join(dir.path, "package.json"),
      JSON.stringify({ name: "job", private: true, scripts: { test: "echo all 3 tests pass" } }),
    );
    fake.enqueue(
      openAiTurn({
        toolCalls: [{ id: "t", name: "run_command", arguments: { command: "npm test" } }],
      }),
      openAiTurn({ text: ["All 3 tests pass."] }),
    );
    const script = step.replaceAll("npx acp-harness", `node ${join(ROOT, "dist/cli.js")}`);
    const child = spawn("bash", ["-euo", "pipefail", "-c", script], {
      cwd: dir.path,
      env: {
        ...process.env,
        OPENAI_API_KEY: "sk-test",
        OPENAI_BASE_URL: `${fake.url}/v1`,
        ACP_HARNESS_HOME: join(dir.path, ".home"),
        HOME: join(dir.path, ".home"),
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.setEncoding("utf8").on("data", (text: string) => stderr += text);
    child.stdout.resume();
    const [code] = await new Promise<[number | null]>((resolve) =>
      child.on("exit", (exitCode) => resolve([exitCode]))
    );
    assert.equal(code, 0, stderr);
    // What the next step reads with jq.
    const result = JSON.parse(await readFile(join(dir.path, "result.json"), "utf8"));
    assert.equal(result.text, "All 3 tests pass.");
    assert.equal(result.stopReason, "end_turn");
    assert.deepEqual(result.toolCalls, [
      { title: "Run: npm test", kind: "execute", status: "completed" },
    ]);
    assert.deepEqual(result.denied, []);
    assert.equal(fake.requests.length, 2);
    assert.match(JSON.stringify(fake.requests[1]?.body), /all 3 tests pass/);
  },
});

Deno.test("README: the OpenTelemetry line exports the turn's spans", async () => {
  await using dir = await tempDir("acp-harness-readme-otel-");
  await using receiver = await startOtlpReceiver();
  const words = shellWords(
    blockWith("sh", "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 npx"),
  );
  const assignments = words.filter((word) => /^[A-Z_]+=/.test(word));
  assert.deepEqual(assignments, ["OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318"]);
  const command = words.slice(assignments.length);
  assert.deepEqual(command.slice(0, 2), ["npx", "acp-harness"]);
  const child = spawn("node", [join(ROOT, "dist/cli.js"), ...command.slice(2)], {
    cwd: dir.path,
    env: {
      ...process.env,
      // The line's collector, moved to this test's port.
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint,
      ACP_HARNESS_HOME: join(dir.path, "home"),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.setEncoding("utf8").on("data", (text: string) => output += text);
  child.stderr.setEncoding("utf8").on("data", (text: string) => output += text);
  const [code] = await new Promise<[number | null]>((resolve) =>
    child.on("exit", (exitCode) => resolve([exitCode]))
  );
  assert.equal(code, 0, output);
  const agent = receiver.spans.find((span) => span.name === "invoke_agent acp-harness");
  assert.equal(agent?.attributes["acp_harness.stop_reason"], "end_turn", output);
  assert.ok(receiver.spans.some((span) => span.name === "chat echo"));
});
