/**
 * A dependency-free stdio MCP server for tests (plain ESM on `node:` modules: runs on Node.js,
 * Deno and Bun). It reads newline-delimited JSON-RPC 2.0 on stdin, answers on stdout and logs only
 * to stderr; it exits when stdin ends.
 *
 * Flags:
 * - `--exit-at-start`: write to stderr and exit with code 3 before reading stdin.
 * - `--hang-at-start`: never answer `initialize` (everything else is still answered).
 * - `--die-after-calls=N`: exit with code 1, unanswered, when the (N+1)th `tools/call` arrives.
 * - `--spawn-grandchild`: start `/bin/sh -c 'sleep 1000; exit 0' fake-mcp-grandchild MARKER` in
 *   this process's group (not detached, stdio ignored); the `grandchild_pid` tool tells its pid.
 * - `--spawn-setsid-grandchild`: start `/bin/sh -c 'trap "" TERM; sleep 1000; exit 0'
 *   fake-mcp-setsid-grandchild MARKER` detached (in a session and group of its own, as `setsid`
 *   makes), ignoring SIGTERM (its `sleep` too), stdio ignored, not waited for.
 * - `--prompts-only`: advertise prompts but no tools (the MCP client then logs a warning of its own
 *   when asked for the tools).
 * - `--elicit`: add the tools that ask the client questions (MCP elicitation): `elicit` sends an
 *   `elicitation/create` (`{mode?, message?, schema?, url?, elicitationId?, complete?}`: a form
 *   by default; with `complete` an accepted URL question is followed by
 *   `notifications/elicitation/complete`) and answers with the client's answer as JSON;
 *   `withdraw` withdraws every question still unanswered (`notifications/cancelled`; their calls
 *   answer `withdrawn`); `elicit_later` answers at once, then asks a question outside any call.
 * - `--marker=TEXT`: not used, so tests can find the process by its command line (the grandchild
 *   carries it too, in its argv and as `FAKE_MCP_MARKER` in its environment).
 *
 * The `meta` tool answers with the `_meta` of its own `tools/call` request (as JSON; `null` when
 * there is none), for tests of what the client hands on (W3C trace context).
 *
 * Environment: `FAKE_MCP_EVENTS` names a file where `cancelled <requestId>` lines are appended
 * when a `notifications/cancelled` for a running `slow` or `elicit` call arrives, and
 * `answer <questionId> <json>` lines when the client answers a question (`--elicit`).
 *
 * @module
 */
import { spawn } from "node:child_process";
import { appendFileSync } from "node:fs";
import process from "node:process";
import { createInterface } from "node:readline";

const PROTOCOL_VERSION = "2025-06-18";
const SUPPORTED_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"];
/** A valid 1x1 PNG (one opaque red pixel). */
const PNG_1X1 =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";

const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const option = (name) => {
  const found = argv.find((arg) => arg.startsWith(`--${name}=`));
  return found === undefined ? undefined : found.slice(name.length + 3);
};
const marker = option("marker") ?? "";
const dieAfterCalls = option("die-after-calls") === undefined
  ? Infinity
  : Number(option("die-after-calls"));

/** Writes one line to stderr. */
function log(text) {
  process.stderr.write(`fake-mcp: ${text}\n`);
}

if (flag("exit-at-start")) {
  process.stderr.write("fake-mcp: exiting at start as asked (--exit-at-start)\n", () => {
    process.exit(3);
  });
} else {
  serve();
}

/** Reads stdin and answers until it ends. */
function serve() {
  let grandchild;
  if (flag("spawn-grandchild")) {
    grandchild = spawn("/bin/sh", ["-c", "sleep 1000; exit 0", "fake-mcp-grandchild", marker], {
      stdio: "ignore",
      env: { ...process.env, FAKE_MCP_MARKER: marker },
    });
    grandchild.on("error", (error) => log(`grandchild failed: ${error.message}`));
  }
  if (flag("spawn-setsid-grandchild")) {
    const escaped = spawn(
      "/bin/sh",
      ["-c", 'trap "" TERM; sleep 1000; exit 0', "fake-mcp-setsid-grandchild", marker],
      { detached: true, stdio: "ignore", env: { ...process.env, FAKE_MCP_MARKER: marker } },
    );
    escaped.on("error", (error) => log(`setsid grandchild failed: ${error.message}`));
    escaped.unref();
  }

  /** Writes one JSON-RPC message to stdout. */
  const send = (message) => {
    process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
  };
  const text = (value) => ({ content: [{ type: "text", text: String(value) }] });

  /** @type {Array<{name: string, description: string, inputSchema: object, outputSchema?: object, annotations?: object, call: (args: any, id: unknown) => object | undefined}>} */
  const tools = [
    {
      name: "echo",
      description: "Echoes the text back",
      inputSchema: {
        type: "object",
        properties: { text: { type: "string", description: "What to echo" } },
        required: ["text"],
      },
      annotations: { readOnlyHint: true },
      call: (args) => text(`echo: ${args.text}`),
    },
    {
      name: "add",
      description: "Adds two numbers",
      inputSchema: {
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      },
      outputSchema: {
        type: "object",
        properties: { sum: { type: "number" } },
        required: ["sum"],
      },
      annotations: { readOnlyHint: true },
      call: (args) => {
        const sum = Number(args.a) + Number(args.b);
        return { ...text(sum), structuredContent: { sum } };
      },
    },
    {
      name: "write_note",
      description: "Writes a note (pretends to)",
      inputSchema: {
        type: "object",
        properties: { note: { type: "string" } },
        required: ["note"],
      },
      annotations: { readOnlyHint: false, destructiveHint: false },
      call: () => text("noted"),
    },
    {
      name: "delete_everything",
      description: "Deletes everything (pretends to)",
      inputSchema: { type: "object", properties: {} },
      annotations: { destructiveHint: true },
      call: () => text("deleted"),
    },
    {
      name: "fail",
      description: "Always fails",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
      call: () => ({ isError: true, content: [{ type: "text", text: "it failed on purpose" }] }),
    },
    {
      name: "image",
      description: "Returns an image, a resource link and an embedded resource",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
      call: () => ({
        content: [
          { type: "image", data: PNG_1X1, mimeType: "image/png" },
          {
            type: "resource_link",
            uri: "file:///note.txt",
            name: "note.txt",
            mimeType: "text/plain",
          },
          {
            type: "resource",
            resource: { uri: "file:///note.txt", mimeType: "text/plain", text: "embedded text" },
          },
        ],
      }),
    },
    {
      name: "slow",
      description: "Never answers until cancelled",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
      call: (_args, id) => {
        slowCalls.add(JSON.stringify(id));
        return undefined;
      },
    },
    {
      name: "env",
      description: "Tells the value of an environment variable",
      inputSchema: {
        type: "object",
        properties: { name: { type: "string" } },
        required: ["name"],
      },
      annotations: { readOnlyHint: true },
      call: (args) => text(process.env[args.name] ?? "(unset)"),
    },
    {
      name: "meta",
      description: "Tells the _meta of its own tools/call request, as JSON",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
      call: (_args, _id, params) => text(JSON.stringify(params._meta ?? null)),
    },
    {
      name: "cwd",
      description: "Tells the server's working directory",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
      call: () => text(process.cwd()),
    },
    {
      name: "add_tool",
      description: "Adds an echo-like tool with this name and announces the change",
      inputSchema: {
        type: "object",
        properties: { name: { type: "string" } },
        required: ["name"],
      },
      annotations: { readOnlyHint: false, destructiveHint: false },
      call: (args) => {
        const name = String(args.name);
        tools.push({
          name,
          description: `An echo added at run time as ${name}`,
          inputSchema: { type: "object", properties: { text: { type: "string" } } },
          annotations: { readOnlyHint: true },
          call: (added) => text(`${name}: ${added.text}`),
        });
        send({ method: "notifications/tools/list_changed" });
        return text("added");
      },
    },
    {
      name: "schema_zoo",
      description: "Takes an input schema with $defs/$ref, anyOf, a format and an untyped property",
      inputSchema: {
        type: "object",
        $defs: {
          point: {
            type: "object",
            properties: { x: { type: "number" }, y: { type: "number" } },
            required: ["x", "y"],
            additionalProperties: false,
          },
        },
        properties: {
          where: { $ref: "#/$defs/point" },
          id: { anyOf: [{ type: "string" }, { type: "integer" }] },
          email: { type: "string", format: "email" },
          anything: { description: "Any JSON value at all" },
        },
        required: ["where"],
        additionalProperties: false,
      },
      annotations: { readOnlyHint: true },
      call: () => text("ok"),
    },
  ];
  /** Questions sent and not answered: their id → the `tools/call` id waiting (or null). */
  const questions = new Map();
  let asked = 0;
  const event = (line) => {
    log(line);
    const events = process.env.FAKE_MCP_EVENTS;
    if (events) appendFileSync(events, `${line}\n`);
  };
  /** Sends a question; `then` gets the client's answer (a result or an error). */
  const ask = (params, callId, then) => {
    const id = `question-${++asked}`;
    questions.set(id, { callId, then });
    send({ id, method: "elicitation/create", params });
    return id;
  };
  if (flag("elicit")) {
    tools.push(
      {
        name: "elicit",
        description: "Asks the client a question and answers with its answer",
        inputSchema: {
          type: "object",
          properties: {
            mode: { type: "string" },
            message: { type: "string" },
            schema: { type: "object" },
            url: { type: "string" },
            elicitationId: { type: "string" },
            complete: { type: "boolean" },
          },
        },
        annotations: { readOnlyHint: true },
        call: (args, id) => {
          const mode = args.mode ?? "form";
          const message = args.message ?? "Your name?";
          const params = mode === "url"
            ? { mode, message, url: args.url, elicitationId: args.elicitationId ?? "flow-1" }
            : {
              mode,
              message,
              requestedSchema: args.schema ??
                { type: "object", properties: { name: { type: "string" } }, required: ["name"] },
            };
          elicitCalls.add(JSON.stringify(id));
          ask(params, id, (answer) => {
            elicitCalls.delete(JSON.stringify(id));
            if (args.complete && mode === "url" && answer.result?.action === "accept") {
              send({
                method: "notifications/elicitation/complete",
                params: { elicitationId: params.elicitationId },
              });
            }
            send({ id, result: text(JSON.stringify(answer.result ?? { error: answer.error })) });
          });
          return undefined;
        },
      },
      {
        name: "withdraw",
        description: "Withdraws every question still unanswered",
        inputSchema: { type: "object", properties: {} },
        annotations: { readOnlyHint: true },
        call: () => {
          const open = [...questions.entries()];
          for (const [questionId, { callId }] of open) {
            questions.delete(questionId);
            send({
              method: "notifications/cancelled",
              params: { requestId: questionId, reason: "withdrawn" },
            });
            if (callId !== null) send({ id: callId, result: text("withdrawn") });
          }
          return text(`withdrew ${open.length}`);
        },
      },
      {
        name: "elicit_later",
        description: "Answers at once, then asks a question outside any call",
        inputSchema: { type: "object", properties: {} },
        annotations: { readOnlyHint: true },
        call: (_args, id) => {
          send({ id, result: text("asking later") });
          ask(
            {
              mode: "form",
              message: "Asked outside a call",
              requestedSchema: { type: "object", properties: { name: { type: "string" } } },
            },
            null,
            () => {},
          );
          return undefined;
        },
      },
    );
  }
  if (grandchild !== undefined) {
    tools.push({
      name: "grandchild_pid",
      description: "Tells the pid of the grandchild process",
      inputSchema: { type: "object", properties: {} },
      annotations: { readOnlyHint: true },
      call: () => text(grandchild.pid),
    });
  }

  const prompts = [
    {
      name: "greet",
      description: "Greets someone",
      arguments: [{ name: "name", description: "Who to greet", required: true }],
      get: (args) => {
        if (typeof args.name !== "string") return undefined;
        return [{ role: "user", content: { type: "text", text: `Say hello to ${args.name}` } }];
      },
    },
    {
      name: "review",
      description: "A two-message review conversation",
      arguments: [],
      get: () => [
        { role: "user", content: { type: "text", text: "Please review my change." } },
        { role: "assistant", content: { type: "text", text: "Sure: show me the diff." } },
      ],
    },
  ];

  /** The ids (as JSON) of `slow` calls still running. */
  const slowCalls = new Set();
  /** The ids (as JSON) of `elicit` calls waiting for their answer. */
  const elicitCalls = new Set();
  let calls = 0;

  const error = (id, code, message) => send({ id, error: { code, message } });

  /** Handles one request; returns its result, or undefined to answer nothing (yet). */
  const handle = (id, method, params) => {
    switch (method) {
      case "initialize": {
        if (flag("hang-at-start")) return;
        const asked = params.protocolVersion;
        send({
          id,
          result: {
            protocolVersion: SUPPORTED_VERSIONS.includes(asked) ? asked : PROTOCOL_VERSION,
            capabilities: flag("prompts-only")
              ? { prompts: { listChanged: false } }
              : { tools: { listChanged: true }, prompts: { listChanged: false } },
            serverInfo: { name: "fake", version: "1.0.0" },
          },
        });
        return;
      }
      case "ping":
        send({ id, result: {} });
        return;
      case "tools/list":
        send({
          id,
          result: { tools: tools.map(({ call: _call, ...tool }) => tool) },
        });
        return;
      case "tools/call": {
        calls += 1;
        if (calls > dieAfterCalls) {
          log(`dying at tools/call number ${calls} (--die-after-calls=${dieAfterCalls})`);
          process.exit(1);
        }
        const tool = tools.find((t) => t.name === params.name);
        if (tool === undefined) {
          error(id, -32602, `Unknown tool: ${params.name}`);
          return;
        }
        const result = tool.call(params.arguments ?? {}, id, params);
        if (result !== undefined) send({ id, result });
        return;
      }
      case "prompts/list":
        send({ id, result: { prompts: prompts.map(({ get: _get, ...prompt }) => prompt) } });
        return;
      case "prompts/get": {
        const prompt = prompts.find((p) => p.name === params.name);
        if (prompt === undefined) {
          error(id, -32602, `Unknown prompt: ${params.name}`);
          return;
        }
        const messages = prompt.get(params.arguments ?? {});
        if (messages === undefined) {
          error(id, -32602, `Missing required arguments for prompt ${params.name}`);
          return;
        }
        send({ id, result: { description: prompt.description, messages } });
        return;
      }
      default:
        error(id, -32601, `Method not found: ${method}`);
    }
  };

  /** Handles one notification (answers nothing). */
  const notice = (method, params) => {
    if (method !== "notifications/cancelled") return;
    const key = JSON.stringify(params.requestId);
    if (!slowCalls.delete(key) && !elicitCalls.has(key)) return;
    event(`cancelled ${params.requestId}`);
  };

  /** Handles the client's answer to a question. */
  const answered = (message) => {
    const question = questions.get(message.id);
    if (question === undefined) return;
    questions.delete(message.id);
    event(`answer ${message.id} ${JSON.stringify(message.result ?? { error: message.error })}`);
    question.then(message);
  };

  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    if (line.trim() === "") return;
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      error(null, -32700, "Parse error");
      return;
    }
    if (message === null || typeof message !== "object" || Array.isArray(message)) {
      error(null, -32600, "Invalid Request");
      return;
    }
    if (typeof message.method !== "string") {
      // An answer to a question; anything else answers nothing we asked: ignore it.
      if (typeof message.id === "string") answered(message);
      return;
    }
    const params = message.params !== null && typeof message.params === "object"
      ? message.params
      : {};
    if (message.id === undefined) notice(message.method, params);
    else handle(message.id, message.method, params);
  });
  lines.on("close", () => {
    log("stdin ended");
    process.exit(0);
  });
  log(`started (pid ${process.pid})`);
}
