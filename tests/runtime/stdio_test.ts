import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync } from "node:fs";
import { mkdir, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, spawnAgent, type StdioAgent } from "../_helpers/acp_client.ts";
import { fakeStdio } from "../_helpers/mcp_servers.ts";
import { BUN, DENO, ROOT, type Runtime, RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const DENO_RUNTIME = RUNTIMES.find((runtime) => runtime.name === "deno") as Runtime;

/** A test's workspace (with a script that hangs, and the data home), removed on dispose. */
interface Workspace extends AsyncDisposable {
  readonly path: string;
  readonly scriptFile: string;
  /** The environment of the servers it starts. */
  readonly env: Record<string, string>;
  /** Starts a server on `runtime` in the workspace. */
  start(runtime: Runtime, args?: readonly string[], env?: Record<string, string>): StdioAgent;
}

async function workspaceDir(): Promise<Workspace> {
  const dir = await tempDir("acp-harness-stdio-");
  const scriptFile = join(dir.path, "hang.json");
  await writeFile(scriptFile, JSON.stringify([{ delayMs: 60_000, text: "never" }]));
  const env = { ...Deno.env.toObject(), ACP_HARNESS_HOME: join(dir.path, "home") };
  return {
    path: dir.path,
    scriptFile,
    env,
    start: (runtime, args = [], extra = {}) =>
      spawnAgent(runtime.command, [...runtime.args, ...args], {
        cwd: dir.path,
        env: { ...env, ...extra },
      }),
    [Symbol.asyncDispose]: () => dir[Symbol.asyncDispose](),
  };
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: serves initialize, session/new and an echo prompt over stdio`, async () => {
    await using ws = await workspaceDir();
    const agent = ws.start(runtime);
    const { client } = agent;
    const init = await client.initialize();
    assert.equal((init.agentInfo as { name: string }).name, "acp-harness");
    const sessionId = await client.newSession(ws.path);
    assert.equal(await client.prompt(sessionId, "hello from stdio"), "end_turn");
    const message = client.updates(sessionId).find(({ update }) =>
      update.sessionUpdate === "agent_message_chunk"
    );
    assert.equal((message?.update.content as { text: string }).text, "Echo: hello from stdio");
    agent.end();
    assert.equal(await exitWithin(agent, 5_000), 0);
    assert.deepEqual(agent.impure, [], "stdout carries protocol frames only");
    assert.deepEqual(client.problems, []);
  });

  Deno.test(`${runtime.name}: answers bad input and keeps serving`, async () => {
    await using ws = await workspaceDir();
    const agent = ws.start(runtime, ["--max-message-bytes", "2048"]);
    const { client } = agent;
    await client.initialize();
    await agent.writeRaw("this is not json\n");
    await agent.writeRaw('{"hello":"world","id":77}\n');
    await agent.writeRaw('[{"jsonrpc":"2.0","id":1,"method":"initialize"}]\n');
    await agent.writeRaw(
      `{"jsonrpc":"2.0","id":99,"method":"session/new","params":{"cwd":"${"x".repeat(4096)}"}}\n`,
    );
    const unknown = client.requestRaw("no/such_method", {});
    await client.waitFor((frames) => frames.filter((frame) => "error" in frame).length >= 5);
    const errors = client.frames.filter((frame) => "error" in frame).map((frame) => [
      frame.id,
      (frame.error as { code: number }).code,
    ]);
    assert.deepEqual(errors.slice(0, 4), [[null, -32700], [77, -32600], [null, -32600], [
      99,
      -32600,
    ]]);
    assert.equal(((await unknown).error as { code: number }).code, -32601);
    const sessionId = await client.newSession(ws.path);
    assert.equal(await client.prompt(sessionId, "still serving"), "end_turn");
    agent.end();
    assert.equal(await exitWithin(agent, 5_000), 0);
    assert.match(agent.stderr(), /Parse error/);
    assert.deepEqual(agent.impure, []);
    assert.deepEqual(client.problems, []);
  });

  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    Deno.test(`${runtime.name}: ${signal} mid-turn answers the prompt cancelled and exits 0`, async () => {
      await using ws = await workspaceDir();
      const agent = ws.start(runtime, ["--model", "scripted", "--script", ws.scriptFile]);
      const { client } = agent;
      await client.initialize();
      const sessionId = await client.newSession(ws.path);
      const prompt = client.prompt(sessionId, "hang");
      await client.waitForUpdate(sessionId, "session_info_update");
      // Deno.kill, not child.kill: Deno's node:child_process reports a child it signalled as killed
      // even when the child handled the signal and exited 0.
      Deno.kill(agent.child.pid as number, signal);
      assert.equal(await prompt, "cancelled");
      assert.equal(await exitWithin(agent, 2_000), 0);
      assert.deepEqual(client.problems, []);
    });
  }

  Deno.test(`${runtime.name}: stdin EOF mid-turn answers the prompt cancelled and exits 0`, async () => {
    await using ws = await workspaceDir();
    const agent = ws.start(runtime, ["--model", "scripted", "--script", ws.scriptFile]);
    const { client } = agent;
    await client.initialize();
    const sessionId = await client.newSession(ws.path);
    const prompt = client.prompt(sessionId, "hang");
    await client.waitForUpdate(sessionId, "session_info_update");
    agent.end();
    assert.equal(await prompt, "cancelled");
    assert.equal(await exitWithin(agent, 2_000), 0);
  });

  Deno.test(`${runtime.name}: --help and --version print to stdout and exit 0`, async () => {
    await using ws = await workspaceDir();
    for (
      const [flag, pattern] of [["--help", /^Usage: acp-harness/], [
        "--version",
        /^\d+\.\d+\.\d+\n$/,
      ]] as const
    ) {
      const agent = ws.start(runtime, [flag]);
      let stdout = "";
      agent.child.stdout?.removeAllListeners("data");
      agent.child.stdout?.on("data", (text: string) => stdout += text);
      assert.equal(await exitWithin(agent, 5_000), 0);
      assert.match(stdout, pattern);
    }
  });

  Deno.test(`${runtime.name}: an unknown flag is a one-line error and a pointer to --help, exit 2`, async () => {
    await using ws = await workspaceDir();
    const agent = ws.start(runtime, ["--mdoel", "echo"]);
    assert.equal(await exitWithin(agent, 5_000), 2);
    assert.equal(
      agent.stderr(),
      'acp-harness: Unknown option "--mdoel" (did you mean "--model"?)\n' +
        'run "acp-harness --help" for usage\n',
    );
    assert.deepEqual(agent.impure, []);
  });

  Deno.test(`${runtime.name}: --log-format json writes one object a line; text lines carry the time`, async () => {
    await using ws = await workspaceDir();
    for (const format of ["json", "text"] as const) {
      const agent = ws.start(runtime, ["--log-format", format, "--log-level", "info"]);
      await agent.client.initialize();
      const sessionId = await agent.client.newSession(ws.path);
      assert.equal(await agent.client.prompt(sessionId, "hi"), "end_turn");
      agent.end();
      assert.equal(await exitWithin(agent, 5_000), 0);
      const lines = agent.stderr().trimEnd().split("\n");
      assert.ok(lines.some((line) => line.includes("prompt ended")), agent.stderr());
      for (const line of lines) {
        if (format === "text") {
          assert.match(line, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z acp-harness \w+: /);
          continue;
        }
        const entry = JSON.parse(line) as Record<string, unknown>;
        assert.equal(typeof entry["message"], "string", line);
        assert.ok(["error", "warn", "info", "debug"].includes(entry["level"] as string), line);
        assert.ok(!Number.isNaN(Date.parse(entry["time"] as string)), line);
      }
    }
  });

  Deno.test(`${runtime.name}: a data directory it cannot use stops the start with one line, exit 2`, async () => {
    await using ws = await workspaceDir();
    await writeFile(join(ws.path, "file"), "x");
    const cases = [
      [join(ws.path, "file", "sub"), "a part of the path is a file (ENOTDIR)"],
      [join(ws.path, "file"), "it is a file (EEXIST)"],
      ["/proc/acp-harness-nope", "cannot create it here (ENOENT)"],
    ] as const;
    for (const [dir, reason] of cases) {
      const agent = ws.start(runtime, ["--data-dir", dir]);
      assert.equal(await exitWithin(agent, 10_000), 2, agent.stderr());
      assert.equal(
        agent.stderr(),
        `acp-harness: Cannot use the data directory "${dir}": ${reason}\n`,
      );
    }
  });

  Deno.test(`${runtime.name}: a problem past the command line is one line, without the usage`, async () => {
    await using ws = await workspaceDir();
    const agent = ws.start(runtime, ["--config", join(ws.path, "missing.json")]);
    assert.equal(await exitWithin(agent, 5_000), 2);
    const lines = agent.stderr().trimEnd().split("\n");
    assert.equal(lines.length, 1, agent.stderr());
    assert.match(lines[0] ?? "", /^acp-harness: .*missing\.json/);
  });
}

Deno.test("deno: relative paths in the config file resolve against the file's directory", async () => {
  await using ws = await workspaceDir();
  const configDir = join(ws.path, "conf");
  const elsewhere = join(ws.path, "elsewhere");
  await mkdir(configDir);
  await mkdir(elsewhere);
  await writeFile(join(configDir, "demo-script.json"), JSON.stringify([{ text: "from script" }]));
  await writeFile(
    join(configDir, "config.json"),
    JSON.stringify({ model: "scripted", script: "./demo-script.json", dataDir: "data" }),
  );
  const [deno] = RUNTIMES;
  assert.ok(deno);
  // No ACP_HARNESS_HOME: the file's dataDir decides.
  const { ACP_HARNESS_HOME: _home, ...env } = ws.env;
  const agent = spawnAgent(deno.command, [...deno.args, "--config", "../conf/config.json"], {
    cwd: elsewhere,
    env,
  });
  await agent.client.initialize();
  const sessionId = await agent.client.newSession(ws.path);
  assert.equal(await agent.client.prompt(sessionId, "hi"), "end_turn");
  const texts = agent.client.updates(sessionId).map(({ update }) =>
    (update.content as { text?: string } | undefined)?.text
  );
  assert.ok(texts.includes("from script"), JSON.stringify(texts));
  agent.end();
  assert.equal(await exitWithin(agent, 5_000), 0);
  assert.ok((await readdir(join(configDir, "data"))).length > 0, "the data directory is conf/data");

  // A missing script names the resolved path and the config file it came from.
  await writeFile(join(configDir, "config.json"), JSON.stringify({ script: "./gone.json" }));
  const failing = spawnAgent(deno.command, [...deno.args, "--config", "../conf/config.json"], {
    cwd: elsewhere,
    env: ws.env,
  });
  assert.equal(await exitWithin(failing, 5_000), 2);
  assert.match(
    failing.stderr(),
    new RegExp(
      `Cannot read "${join(configDir, "gone.json")}" \\("script" in "${
        join(configDir, "config.json")
      }"\\)`,
    ),
  );
});

Deno.test("deno: flags beat environment variables, which beat the config file", async () => {
  await using ws = await workspaceDir();
  const configFile = join(ws.path, "config.json");
  await writeFile(configFile, JSON.stringify({ mode: "auto", logLevel: "debug" }));
  const cases: Array<[string[], Record<string, string>, string]> = [
    [[], { ACP_HARNESS_CONFIG: configFile }, "auto"],
    [[], { ACP_HARNESS_CONFIG: configFile, ACP_HARNESS_MODE: "read-only" }, "read-only"],
    [["--mode", "ask", "--config", configFile], { ACP_HARNESS_MODE: "read-only" }, "ask"],
  ];
  const [deno] = RUNTIMES;
  assert.ok(deno);
  for (const [args, env, expected] of cases) {
    const agent = spawnAgent(deno.command, [...deno.args, ...args], {
      cwd: ws.path,
      env: { ...ws.env, ...env },
    });
    await agent.client.initialize();
    const result = await agent.client.request<{ modes: { currentModeId: string } }>(
      "session/new",
      { cwd: ws.path, mcpServers: [] },
    );
    assert.equal(result.modes.currentModeId, expected, JSON.stringify({ args, env }));
    agent.end();
    assert.equal(await exitWithin(agent, 5_000), 0);
  }
});

Deno.test("deno: stdin and stdout that are files, not pipes, are served too", async () => {
  // On pipes the Deno entry reads and writes through node:net sockets; files take the other path.
  await using ws = await workspaceDir();
  const input = join(ws.path, "in.jsonl");
  const output = join(ws.path, "out.jsonl");
  await writeFile(
    input,
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}\nnot json\n',
  );
  const [deno] = RUNTIMES;
  assert.ok(deno);
  const inputFd = openSync(input, "r");
  const outputFd = openSync(output, "w");
  try {
    const child = spawn(deno.command, [...deno.args], {
      cwd: ws.path,
      env: ws.env,
      stdio: [inputFd, outputFd, "ignore"],
    });
    const [code] = await once(child, "exit");
    assert.equal(code, 0);
  } finally {
    closeSync(inputFd);
    closeSync(outputFd);
  }
  const lines = (await readFile(output, "utf8")).trimEnd().split("\n").map((line) =>
    JSON.parse(line)
  );
  // Two answers (in either order: JSON-RPC does not order answers to different requests).
  assert.equal(lines.length, 2);
  const initialized = lines.find((line) => line.id === 1);
  assert.equal(initialized?.result?.protocolVersion, 1);
  assert.deepEqual(lines.find((line) => line.id === null), {
    jsonrpc: "2.0",
    id: null,
    error: { code: -32700, message: "Parse error: the line is not valid JSON" },
  });
});

Deno.test("deno: bad values in flags, environment and config file exit 2 naming them", async () => {
  await using ws = await workspaceDir();
  const badFile = join(ws.path, "bad.json");
  await writeFile(badFile, JSON.stringify({ mode: "yolo" }));
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [
      ["--mode", "yolo"],
      {},
      /Invalid value "yolo" for "--mode": expected one of ask, auto, read-only/,
    ],
    [["--log-level"], {}, /Option "--log-level" needs a value/],
    [[], { ACP_HARNESS_MODE: "yolo" }, /ACP_HARNESS_MODE: Invalid value "yolo"/],
    [["--config", badFile], {}, /"mode" must be one of ask, auto, read-only/],
    [["--model", "gpt-none"], {}, /Unknown model "gpt-none"/],
    [["--model", "scripted"], {}, /Model "scripted" needs a script/],
    [["--script", join(ws.path, "missing.json")], {}, /Cannot read ".*missing.json"/],
  ];
  const [deno] = RUNTIMES;
  assert.ok(deno);
  for (const [args, env, pattern] of cases) {
    const agent = spawnAgent(deno.command, [...deno.args, ...args], {
      cwd: ws.path,
      env: { ...ws.env, ...env },
    });
    assert.equal(await exitWithin(agent, 5_000), 2, JSON.stringify(args));
    assert.match(agent.stderr().split("\n")[0] ?? "", pattern);
  }
});

Deno.test("deno: a client's initialize to an agent that exits on a bad flag is answered, not left waiting", async () => {
  await using ws = await workspaceDir();
  const agent = ws.start(DENO_RUNTIME, ["--mode", "yolo"]);
  // Sent at once, before the agent read its flags: the agent exits 2 without answering it.
  const error = await agent.client.request("initialize", { protocolVersion: 1 }).then(
    () => undefined,
    (failure: unknown) => failure as Error,
  );
  assert.ok(error, "initialize is not answered with a result");
  assert.match(error.message, /the agent exited \(code 2\) without answering/);
  assert.match(error.message, /Invalid value "yolo" for "--mode"/);
  assert.equal(await exitWithin(agent, 5_000), 2);
  // A request after the exit is answered the same way at once.
  await assert.rejects(agent.client.request("session/list", {}), /the agent exited/);
});

/** Every way to start the server: the three runtimes, and the bundle on Deno and Bun too. */
const ENTRIES: readonly Runtime[] = [
  ...RUNTIMES,
  { name: "deno", command: DENO, args: ["run", "-A", `${ROOT}dist/cli.js`] },
  { name: "bun", command: BUN, args: [`${ROOT}dist/cli.js`] },
];

for (const entry of ENTRIES) {
  const how = entry.args.at(-1)?.replace(ROOT, "");
  Deno.test(`${entry.name} ${how}: what a library prints with console.log or console.debug goes to stderr, not among the frames`, async () => {
    await using ws = await workspaceDir();
    const agent = ws.start(entry);
    // The bundle once left the console alone: the MCP client's console.debug about a server
    // without tools went to stdout, in the middle of the protocol.
    const closed = new Promise((resolve) => agent.child.once("close", resolve));
    await agent.client.initialize();
    const fake = fakeStdio("--prompts-only");
    await agent.client.newSession(ws.path, {
      mcpServers: [{ name: "prompts", command: fake.command, args: fake.args, env: [] }],
    });
    agent.end();
    assert.equal(await exitWithin(agent, 20_000), 0, agent.stderr());
    await closed;
    assert.deepEqual(agent.impure, [], "stdout carries frames only");
    assert.match(agent.stderr(), /listTools\(\) called but server does not advertise tools/);
  });
}
