/**
 * End-to-end: the reference `@modelcontextprotocol/server-everything` in a session, over stdio,
 * Streamable HTTP and SSE, driven by the scripted model through the in-memory server. Every
 * frame the agent sends is checked against the ACP schema by the test client.
 */
import assert from "node:assert/strict";
import process from "node:process";
import {
  everythingStdio,
  processesWithMarker,
  startEverythingRemote,
} from "../_helpers/mcp_servers.ts";
import { type MemoryServer, startServer } from "../_helpers/server.ts";
import { TempDirs } from "../_helpers/temp_dir.ts";
import { lastToolUpdate, toolUpdates } from "./_session_helpers.ts";

type Update = Record<string, unknown>;
type Block = Record<string, unknown>;

/** The last update of tool call `id`: its outcome once the turn ended. */
const outcome = lastToolUpdate;

/** The content blocks of tool call `id`'s outcome, out of their `{type: "content"}` wrappers. */
function blocks(server: MemoryServer, sessionId: string, id: string): Block[] {
  const content = (outcome(server, sessionId, id).content ?? []) as Block[];
  return content.map((item) => {
    assert.equal(item.type, "content", `tool call ${id} shows content blocks`);
    return item.content as Block;
  });
}

/** The text blocks of tool call `id`'s outcome, joined. */
const textOf = (server: MemoryServer, sessionId: string, id: string): string =>
  blocks(server, sessionId, id).filter((block) => block.type === "text").map((block) => block.text)
    .join("\n");

/** What a {@link recordingProxy} saw: one entry per request, once the upstream answered. */
interface Seen {
  readonly method: string;
  readonly sessionId: string | null;
  readonly status: number;
  /** The JSON-RPC methods a POST carried (none for answers). */
  readonly methods: readonly string[];
}

/** A Streamable HTTP proxy that records the requests it forwards. */
interface RecordingProxy extends AsyncDisposable {
  /** The proxy's URL (127.0.0.1). */
  readonly url: string;
  /** The requests forwarded so far. */
  readonly seen: readonly Seen[];
}

/**
 * A proxy on 127.0.0.1 in front of a Streamable HTTP MCP endpoint that records each request's
 * method, `Mcp-Session-Id` and answer status: how a test sees the MCP session `DELETE` (the
 * everything server only logs it on stdout, which startEverythingRemote does not expose).
 *
 * @param target The endpoint, e.g. `http://127.0.0.1:PORT/mcp`
 */
function recordingProxy(target: string): RecordingProxy {
  const seen: Seen[] = [];
  const upstreams = new Set<AbortController>();
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (
    request,
  ) => {
    const headers = new Headers(request.headers);
    headers.delete("host");
    const controller = new AbortController();
    upstreams.add(controller);
    const body = request.method === "POST" ? await request.arrayBuffer() : null;
    const methods = body === null ? [] : methodsOf(new TextDecoder().decode(body));
    const answer = await fetch(target, {
      method: request.method,
      headers,
      body,
      signal: controller.signal,
    });
    seen.push({
      method: request.method,
      sessionId: request.headers.get("mcp-session-id"),
      status: answer.status,
      methods,
    });
    const answerHeaders = new Headers(answer.headers);
    answerHeaders.delete("content-length");
    answerHeaders.delete("content-encoding");
    return new Response(answer.body, { status: answer.status, headers: answerHeaders });
  });
  return {
    url: `http://127.0.0.1:${server.addr.port}/mcp`,
    seen,
    async [Symbol.asyncDispose](): Promise<void> {
      // An event stream still open ends with its upstream request, so the server can finish.
      for (const controller of upstreams) controller.abort();
      await server.shutdown();
    },
  };
}

/** The methods of a JSON-RPC message or batch. */
function methodsOf(text: string): string[] {
  const parsed = JSON.parse(text) as unknown;
  return (Array.isArray(parsed) ? parsed : [parsed]).map((message) =>
    (message as { method?: unknown }).method
  ).filter((method): method is string => typeof method === "string");
}

const SERVER = "everything";
const tool = (name: string): string => `mcp__${SERVER}__${name}`;

Deno.test("initialize advertises MCP over HTTP and SSE", async () => {
  const server = startServer();
  const result = await server.client.initialize();
  const capabilities = result.agentCapabilities as Record<string, unknown>;
  assert.deepEqual(capabilities.mcpCapabilities, { http: true, sse: true });
  assert.deepEqual(server.client.problems, []);
  await server.disconnect();
});

for (const transport of ["stdio", "streamableHttp", "sse"] as const) {
  Deno.test(`everything over ${transport}: tools, rich results, cancellation, close`, async () => {
    await using dirs = new TempDirs("acp-harness-mcp-everything-");
    const cwd = await dirs.make();
    const marker = crypto.randomUUID();
    await using remote = transport === "stdio" ? undefined : await startEverythingRemote(transport);
    // Disposed before `remote` (declared after it): the proxy ends its streams first.
    await using proxy = transport === "streamableHttp" ? recordingProxy(remote!.url) : undefined;
    const declaration = transport === "stdio"
      ? {
        name: SERVER,
        ...everythingStdio(),
        // The marker reaches the server's environment: get-env shows it, /proc finds it.
        env: [{ name: "ACP_HARNESS_PROBE", value: marker }],
      }
      : {
        type: transport === "sse" ? "sse" : "http",
        name: SERVER,
        url: proxy?.url ?? remote!.url,
        headers: [],
      };

    const calls = [
      { id: "e1", name: tool("echo"), arguments: { message: "hello mcp" } },
      { id: "s1", name: tool("get-sum"), arguments: { a: 2, b: 40 } },
      { id: "i1", name: tool("get-tiny-image"), arguments: {} },
      { id: "l1", name: tool("get-resource-links"), arguments: { count: 2 } },
      { id: "c1", name: tool("get-structured-content"), arguments: { location: "Chicago" } },
      // The server's tools are only there under their prefixed names.
      { id: "u1", name: "echo", arguments: { message: "bare" } },
      { id: "u2", name: tool("no-such-tool"), arguments: {} },
      // Remote servers get no env from the declaration; only stdio has get-env checked.
      ...(transport === "stdio" ? [{ id: "v1", name: tool("get-env"), arguments: {} }] : []),
    ];
    const server = startServer({
      config: { model: "scripted", mode: "auto" },
      // PATH is on the allowlist stdio servers inherit; the API key is not.
      env: { PATH: process.env.PATH ?? "", OPENAI_API_KEY: "sk-not-for-mcp-servers" },
      script: [
        { toolCalls: calls },
        { text: "done" },
        {
          toolCalls: [{
            id: "o1",
            name: tool("trigger-long-running-operation"),
            arguments: { duration: 60, steps: 60 },
          }],
        },
        { text: "never reached" },
      ],
    });
    // Also when an assertion fails: disconnecting closes the session and its MCP server.
    await using _disconnect = { [Symbol.asyncDispose]: () => server.disconnect() };
    await server.client.initialize();
    const sessionId = await server.client.newSession(cwd, { mcpServers: [declaration] });

    assert.equal(await server.client.prompt(sessionId, "use the tools"), "end_turn");

    const announced = toolUpdates(server, sessionId, "e1")[0]!;
    assert.equal(announced.sessionUpdate, "tool_call");
    assert.equal(announced.title, "Echo Tool (MCP everything)");
    assert.equal(announced.kind, "read", "readOnlyHint without openWorldHint reads");
    for (const { id } of calls.filter(({ id }) => !id.startsWith("u"))) {
      assert.equal(outcome(server, sessionId, id).status, "completed", id);
    }
    assert.equal(textOf(server, sessionId, "e1"), "Echo: hello mcp");
    assert.equal(textOf(server, sessionId, "s1"), "The sum of 2 and 40 is 42.");

    const image = blocks(server, sessionId, "i1").filter((block) => block.type === "image");
    assert.equal(image.length, 1);
    assert.equal(image[0]!.mimeType, "image/png");
    assert.match(image[0]!.data as string, /^iVBORw0KGgo/, "the PNG's base64");

    assert.deepEqual(
      blocks(server, sessionId, "l1").filter((block) => block.type === "resource_link"),
      [
        {
          type: "resource_link",
          uri: "demo://resource/dynamic/blob/1",
          name: "Blob Resource 1",
          // The server serves its dynamic blobs as base64 of text, labelled text/plain.
          mimeType: "text/plain",
        },
        {
          type: "resource_link",
          uri: "demo://resource/dynamic/text/2",
          name: "Text Resource 2",
          mimeType: "text/plain",
        },
      ],
    );

    const weather = { temperature: 36, conditions: "Light rain / drizzle", humidity: 82 };
    assert.deepEqual(outcome(server, sessionId, "c1").rawOutput, weather);
    assert.deepEqual(JSON.parse(textOf(server, sessionId, "c1")), weather);

    for (const [id, name] of [["u1", "echo"], ["u2", tool("no-such-tool")]]) {
      const failed = outcome(server, sessionId, id!);
      assert.equal(failed.status, "failed", id);
      assert.match(JSON.stringify(failed.content), new RegExp(`Unknown tool \\\\"${name}\\\\"`));
    }

    if (transport === "stdio") {
      const env = JSON.parse(textOf(server, sessionId, "v1")) as Record<string, string>;
      assert.equal(env.ACP_HARNESS_PROBE, marker, "the declared env reached the server");
      assert.equal(env.PATH, process.env.PATH, "PATH is inherited from the host env");
      assert.equal(env.OPENAI_API_KEY, undefined, "host secrets are not inherited");
    }

    // A long operation (60 s) is cancelled while it runs: the turn ends at once.
    const started = Date.now();
    const prompt = server.client.prompt(sessionId, "run the long one");
    await server.client.waitFor(() =>
      toolUpdates(server, sessionId, "o1").some((update) => update.status === "in_progress")
    );
    await server.client.notify("session/cancel", { sessionId });
    assert.equal(await prompt, "cancelled");
    const took = Date.now() - started;
    assert.ok(took < 10_000, `the cancelled turn took ${took} ms`);
    assert.equal(outcome(server, sessionId, "o1").status, "failed");

    const pids = transport === "stdio" ? await processesWithMarker(marker) : [];
    if (transport === "stdio") assert.ok(pids.length > 0, "the stdio server runs");

    await server.client.request("session/close", { sessionId });

    if (transport === "stdio") {
      // session/close waits for the server's process to end (stdin closed, grace, group kill).
      assert.deepEqual(await processesWithMarker(marker), [], "the stdio server is gone");
    }
    if (proxy) {
      const mcpSession = proxy.seen.find((request) => request.sessionId !== null)?.sessionId;
      assert.ok(mcpSession, "the server gave an Mcp-Session-Id");
      assert.deepEqual(
        proxy.seen.filter((request) => request.method === "DELETE"),
        [{ method: "DELETE", sessionId: mcpSession, status: 200, methods: [] }],
        "session/close ended the MCP session",
      );
      assert.ok(
        proxy.seen.some((request) => request.methods.includes("notifications/cancelled")),
        "the server was told the call was cancelled",
      );
      // The server forgot the session: a stream for it is refused (400, "No valid session ID").
      const stale = await fetch(remote!.url, {
        headers: { accept: "text/event-stream", "mcp-session-id": mcpSession },
      });
      await stale.body?.cancel();
      assert.equal(stale.status, 400);
    }

    assert.deepEqual(server.client.problems, []);
  });
}
