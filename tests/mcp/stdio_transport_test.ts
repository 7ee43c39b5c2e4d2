import assert from "node:assert/strict";
import process from "node:process";
import type { JSONRPCMessage } from "@modelcontextprotocol/client";
import { NodeHost } from "../../src/host/node_host.ts";
import { HostStdioTransport } from "../../src/mcp/stdio_transport.ts";
import { CHILD_INHERITED_ENV, envNameMatcher } from "../../src/host/child_env.ts";
import { isAlive } from "../host/_processes.ts";
import { fakeStdio, NODE, processesWithMarker } from "../_helpers/mcp_servers.ts";
import { pollUntil } from "../_helpers/wait.ts";

const INITIALIZE: JSONRPCMessage = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: {
    protocolVersion: "2025-06-18",
    capabilities: {},
    clientInfo: { name: "stdio-transport-test", version: "0" },
  },
};

/** The host most tests use: only what `node` needs from this environment. */
function host(): NodeHost {
  return new NodeHost({ PATH: process.env.PATH, HOME: process.env.HOME });
}

/** A `node -e` script as a server command line (CommonJS: `require` works). */
function script(code: string): { command: string; args: string[] } {
  return { command: NODE, args: ["-e", code] };
}

/** What a transport reported, with a way to wait for the next report. */
class Recorder {
  readonly messages: unknown[] = [];
  readonly errors: Error[] = [];
  closes = 0;
  #wake: () => void = () => {};
  #changed = this.#next();

  constructor(transport: HostStdioTransport) {
    transport.onmessage = (message) => this.#note(() => this.messages.push(message));
    transport.onerror = (error) => this.#note(() => this.errors.push(error));
    transport.onclose = () => this.#note(() => this.closes++);
  }

  /** Resolves once `ready` holds, checking after every report. */
  async until(ready: () => boolean): Promise<void> {
    while (!ready()) await this.#changed;
  }

  #next(): Promise<void> {
    return new Promise((resolve) => this.#wake = resolve);
  }

  #note(record: () => void): void {
    record();
    const wake = this.#wake;
    this.#changed = this.#next();
    wake();
  }
}

function transportFor(
  command: { command: string; args: string[] },
  options: { env?: Record<string, string>; graceMs?: number; processes?: NodeHost } = {},
): HostStdioTransport {
  return new HostStdioTransport({
    processes: options.processes ?? host(),
    command: command.command,
    args: command.args,
    env: options.env ?? {},
    cwd: "/",
    ...(options.graceMs === undefined ? {} : { graceMs: options.graceMs }),
  });
}

Deno.test("HostStdioTransport runs an initialize round trip with the fake server", async () => {
  const transport = transportFor(fakeStdio());
  const seen = new Recorder(transport);
  await transport.start();
  try {
    assert.ok((transport.pid ?? 0) > 0);
    await transport.send(INITIALIZE);
    await seen.until(() => seen.messages.length > 0);
    const [answer] = seen.messages as Array<
      { id: number; result: { serverInfo: { name: string }; protocolVersion: string } }
    >;
    assert.equal(answer!.id, 1);
    assert.equal(answer!.result.serverInfo.name, "fake");
    assert.equal(answer!.result.protocolVersion, "2025-06-18");
    await transport.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    await transport.send({ jsonrpc: "2.0", id: 2, method: "tools/list" });
    await seen.until(() => seen.messages.length > 1);
    const tools = (seen.messages[1] as { result: { tools: Array<{ name: string }> } }).result.tools;
    assert.ok(tools.some((tool) => tool.name === "echo"));
    assert.deepEqual(seen.errors, []);
  } finally {
    await transport.close();
  }
  // The server exits by itself when its input ends.
  assert.deepEqual(transport.exit?.code, 0);
  assert.equal(transport.exit?.signal, null);
  assert.equal(seen.closes, 1);
  assert.equal(await isAlive(transport.pid!), false);
});

Deno.test("HostStdioTransport reads CRLF lines and messages split across writes", async () => {
  const transport = transportFor(script(`
    process.stdout.write('{"jsonrpc":"2.0","method":"one"}\\r\\n\\r\\n{"jsonrpc":"2.0",');
    // The rest of the second message only once the test has seen the first: two writes apart.
    process.stdin.once("data", () => process.stdout.write('"method":"two"}\\r\\n'));
    process.stdin.on("end", () => process.exit(0));
  `));
  const seen = new Recorder(transport);
  await transport.start();
  try {
    await seen.until(() => seen.messages.length >= 1);
    await transport.send({ jsonrpc: "2.0", method: "go" });
    await seen.until(() => seen.messages.length >= 2);
    assert.deepEqual(seen.messages, [
      { jsonrpc: "2.0", method: "one" },
      { jsonrpc: "2.0", method: "two" },
    ]);
    assert.deepEqual(seen.errors, []);
  } finally {
    await transport.close();
  }
});

Deno.test("HostStdioTransport reads a long message across many chunks, with multi-byte text intact", async () => {
  // 8 MiB of "é" (two bytes each) in one line, written in pieces, so chunk borders fall inside
  // characters and the line spans hundreds of reads.
  const transport = transportFor(script(`
    const text = "é".repeat(4 * 1024 * 1024);
    const line = JSON.stringify({ jsonrpc: "2.0", method: "big", params: { text } }) + "\\n";
    const bytes = Buffer.from(line);
    for (let at = 0; at < bytes.length; at += 65537) process.stdout.write(bytes.subarray(at, at + 65537));
    process.stdout.write('{"jsonrpc":"2.0","method":"after"}\\n');
    process.stdin.resume();
    process.stdin.on("end", () => process.exit(0));
  `));
  const seen = new Recorder(transport);
  await transport.start();
  try {
    await seen.until(() => seen.messages.length >= 2);
    const big = seen.messages[0] as { method: string; params: { text: string } };
    assert.equal(big.method, "big");
    assert.equal(big.params.text.length, 4 * 1024 * 1024);
    assert.ok(/^é+$/.test(big.params.text));
    assert.deepEqual(seen.messages[1], { jsonrpc: "2.0", method: "after" });
    assert.deepEqual(seen.errors, []);
  } finally {
    await transport.close();
  }
});

Deno.test("HostStdioTransport drops log and progress floods and repeated list changes, delivers the rest", async () => {
  const transport = transportFor(script(`
    const lines = [];
    for (let n = 0; n < 10000; n++) {
      lines.push(JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { level: "info", data: n } }));
      lines.push(JSON.stringify({ jsonrpc: "2.0", method: "notifications/progress", params: { progressToken: 1, progress: n } }));
      lines.push(JSON.stringify({ jsonrpc: "2.0", method: "notifications/tools/list_changed" }));
    }
    lines.push('{"jsonrpc":"2.0","method":"last"}');
    process.stdout.write(lines.join("\\n") + "\\n");
    process.stdin.resume();
    process.stdin.on("end", () => process.exit(0));
  `));
  const seen = new Recorder(transport);
  await transport.start();
  try {
    await seen.until(() =>
      seen.messages.some((message) => (message as { method?: string }).method === "last")
    );
    const methods = seen.messages.map((message) => (message as { method: string }).method);
    assert.ok(!methods.includes("notifications/message"), "logs are dropped");
    assert.ok(!methods.includes("notifications/progress"), "progress is dropped");
    const changes = methods.filter((method) => method === "notifications/tools/list_changed");
    // One per slice of handling at most: a handful, not ten thousand.
    assert.ok(changes.length >= 1 && changes.length < 1000, `${changes.length} list changes`);
    assert.deepEqual(seen.errors, []);
  } finally {
    await transport.close();
  }
});

Deno.test("HostStdioTransport reports a non-JSON banner line and still delivers later messages", async () => {
  const transport = transportFor(script(`
    process.stdout.write("Secure MCP Server running on stdio\\n");
    process.stdout.write('{"not":"json-rpc"}\\n');
    process.stdout.write('{"jsonrpc":"2.0","method":"after"}\\n');
    process.stdin.resume();
    process.stdin.on("end", () => process.exit(0));
  `));
  const seen = new Recorder(transport);
  await transport.start();
  try {
    await seen.until(() => seen.messages.length > 0);
    assert.deepEqual(seen.messages, [{ jsonrpc: "2.0", method: "after" }]);
    assert.equal(seen.errors.length, 2);
    assert.match(seen.errors[0]!.message, /not JSON-RPC: "Secure MCP Server running on stdio"/);
    assert.match(seen.errors[1]!.message, /not JSON-RPC/);
  } finally {
    await transport.close();
  }
});

Deno.test("HostStdioTransport tells onclose once when the server exits, with its code and stderr", async () => {
  const transport = transportFor(script(`
    process.stderr.write("x".repeat(10000) + "\\nfatal: no config\\n", () => process.exit(7));
  `));
  const seen = new Recorder(transport);
  await transport.start();
  await seen.until(() => seen.closes > 0);
  const exit = transport.exit;
  assert.equal(exit?.code, 7);
  assert.equal(exit?.signal, null);
  assert.ok(exit!.stderr.endsWith("fatal: no config\n"));
  assert.ok(exit!.stderr.length <= 4096, `${exit!.stderr.length} characters kept`);
  assert.equal(transport.stderrTail, exit!.stderr);
  await transport.close();
  await transport.close();
  assert.equal(seen.closes, 1);
});

Deno.test("HostStdioTransport rejects a send after the server exited", async () => {
  const transport = transportFor(script("process.exit(0)"));
  const seen = new Recorder(transport);
  await transport.start();
  await seen.until(() => seen.closes > 0);
  await assert.rejects(transport.send(INITIALIZE), /not running/);
  await transport.close();
});

Deno.test("HostStdioTransport rejects a send before start, and a second start", async () => {
  const transport = transportFor(fakeStdio());
  await assert.rejects(transport.send(INITIALIZE), /not running/);
  await transport.start();
  try {
    await assert.rejects(transport.start(), /already started/);
  } finally {
    await transport.close();
  }
});

Deno.test("HostStdioTransport.start() rejects for a missing absolute command", async () => {
  const transport = transportFor({ command: "/nonexistent/acp-harness-mcp-server", args: [] });
  const seen = new Recorder(transport);
  await assert.rejects(transport.start(), /ENOENT/);
  assert.equal(transport.pid, undefined);
  await transport.close();
  assert.equal(seen.closes, 0);
});

Deno.test("HostStdioTransport.close() kills a server that ignores the end of its input and SIGTERM", async () => {
  const transport = transportFor(
    script(`
      process.on("SIGTERM", () => {});
      process.stdin.on("data", () => {});
      process.stdin.on("end", () => {});
      setInterval(() => {}, 1000);
      process.stdout.write('{"jsonrpc":"2.0","method":"ready"}\\n');
    `),
    { graceMs: 200 },
  );
  const seen = new Recorder(transport);
  await transport.start();
  // Only once the SIGTERM handler is in place does the test mean anything.
  await seen.until(() => seen.messages.length > 0);
  const started = performance.now();
  await transport.close();
  const took = performance.now() - started;
  assert.equal(transport.exit?.signal, "SIGKILL");
  assert.ok(took >= 150, `waited the grace period (${took} ms)`);
  assert.ok(took < 2_000, `then killed it (${took} ms)`);
  assert.equal(await isAlive(transport.pid!), false);
  assert.equal(seen.closes, 1);
});

Deno.test("HostStdioTransport.close() ends the server's whole process group", async () => {
  const marker = crypto.randomUUID();
  const transport = transportFor(fakeStdio("--spawn-grandchild", `--marker=${marker}`), {
    graceMs: 500,
  });
  const seen = new Recorder(transport);
  await transport.start();
  try {
    await transport.send({ ...INITIALIZE, id: 1 });
    await seen.until(() => seen.messages.length > 0);
    // The grandchild is not our child: nothing announces it, so /proc is polled.
    await pollUntil(async () => (await processesWithMarker(marker)).length >= 2, {
      what: "the fake server and its grandchild running",
    });
  } finally {
    await transport.close();
  }
  assert.deepEqual(await processesWithMarker(marker), []);
});

Deno.test("HostStdioTransport gives the server only allow-listed host variables and its declared env", async () => {
  const processes = new NodeHost({
    PATH: process.env.PATH,
    HOME: "/home/tester",
    LANG: "C.UTF-8",
    LC_CTYPE: "C.UTF-8",
    XDG_CONFIG_HOME: "/home/tester/.config",
    TZ: "UTC",
    OPENAI_API_KEY: "sk-secret",
    ANTHROPIC_API_KEY: "sk-ant-secret",
    ACP_HARNESS_TOKEN: "token",
    DENO_AUTH_TOKENS: "secret@deno.land",
    ACP_HARNESS_SECRET: "secret",
    AWS_SECRET_ACCESS_KEY: "secret",
  });
  const env: Record<string, string> = JSON.parse(
    '{"DECLARED":"yes","TZ":"Europe/Paris","__proto__":"an ordinary variable","A_KEY":"k"}',
  );
  const transport = transportFor(
    script(`
      const raw = require("fs").readFileSync("/proc/self/environ", "latin1");
      const vars = raw.split("\\0").filter(Boolean);
      process.stdout.write(JSON.stringify({ jsonrpc: "2.0", method: "env", params: { vars } }) + "\\n");
      process.stdin.resume();
      process.stdin.on("end", () => process.exit(0));
    `),
    { processes, env },
  );
  const seen = new Recorder(transport);
  await transport.start();
  try {
    await seen.until(() => seen.messages.length > 0);
  } finally {
    await transport.close();
  }
  const vars = (seen.messages[0] as { params: { vars: string[] } }).params.vars;
  const got = new Map(vars.map((line) => {
    const at = line.indexOf("=");
    return [line.slice(0, at), line.slice(at + 1)] as const;
  }));
  const names = [...got.keys()].filter((name) => !name.startsWith("ACP_HARNESS_OWNER_")).sort();
  assert.deepEqual(names, [
    "A_KEY",
    "DECLARED",
    "HOME",
    "LANG",
    "LC_CTYPE",
    "PATH",
    "TZ",
    "XDG_CONFIG_HOME",
    "__proto__",
  ]);
  const inherited = envNameMatcher(CHILD_INHERITED_ENV);
  for (const name of names) assert.ok(inherited(name) || Object.hasOwn(env, name), name);
  assert.equal(got.get("DECLARED"), "yes");
  assert.equal(got.get("__proto__"), "an ordinary variable");
  assert.equal(got.get("TZ"), "Europe/Paris", "declared over inherited");
  assert.equal(got.get("HOME"), "/home/tester");
  assert.equal(got.get("LANG"), "C.UTF-8");
  assert.equal(got.get("OPENAI_API_KEY"), undefined);
  assert.equal(got.get("ACP_HARNESS_SECRET"), undefined);
});
