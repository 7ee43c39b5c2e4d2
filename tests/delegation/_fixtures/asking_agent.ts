/**
 * A minimal ACP agent for the delegate tool's tests (run with `deno run`): every prompt asks
 * permission once with the options in `ASKING_AGENT_OPTIONS` (kinds, comma-separated; default
 * all four), then answers `chose <optionId>` or `chose cancelled`. A prompt `hang` waits for
 * `session/cancel`; `refuse` ends with `refusal`; `crash` exits mid-prompt; `setsid` starts
 * `setsid sh -c 'trap "" TERM; sleep 300; exit 0'` (a session of its own, ignoring SIGTERM, not
 * waited for), says `escaped <pid>`, then waits for `session/cancel` like `hang`.
 *
 * @module
 */
import { agent, ndJsonStream, type RequestPermissionResponse } from "@agentclientprotocol/sdk";

const kinds =
  (Deno.env.get("ASKING_AGENT_OPTIONS") ?? "allow_once,allow_always,reject_once,reject_always")
    .split(",");
const cancels = new Map<string, () => void>();

const app = agent({ name: "asking-agent" })
  .onRequest("initialize", () => ({
    protocolVersion: 1,
    agentCapabilities: {},
    agentInfo: {
      name: "asking-agent",
      version: Deno.env.get("ACP_HARNESS_DELEGATION_DEPTH") ?? "",
    },
  }))
  .onRequest("session/new", () => ({ sessionId: "s1" }))
  .onNotification("session/cancel", ({ params }) => cancels.get(params.sessionId)?.())
  .onRequest("session/prompt", async ({ params, client }) => {
    const text = params.prompt.map((block) => block.type === "text" ? block.text : "").join("");
    const say = (words: string) =>
      client.notify("session/update", {
        sessionId: params.sessionId,
        update: { sessionUpdate: "agent_message_chunk", content: { type: "text", text: words } },
      });
    if (text === "setsid") {
      const escaped = new Deno.Command("setsid", {
        args: ["sh", "-c", 'trap "" TERM; sleep 300; exit 0'],
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
      escaped.unref();
      await say(`escaped ${escaped.pid}; `);
    }
    if (text === "hang" || text === "setsid") {
      await say("hanging");
      await new Promise<void>((resolve) => cancels.set(params.sessionId, resolve));
      return { stopReason: "cancelled" as const };
    }
    if (text === "refuse") return { stopReason: "refusal" as const };
    if (text === "crash") Deno.exit(7);
    await say(`depth ${Deno.env.get("ACP_HARNESS_DELEGATION_DEPTH")}; `);
    const answer: RequestPermissionResponse = await client.request("session/request_permission", {
      sessionId: params.sessionId,
      toolCall: { toolCallId: "t1", title: "Touch a file", kind: "edit", status: "pending" },
      options: kinds.map((kind) => ({
        optionId: `opt_${kind}`,
        name: kind,
        kind: kind as "allow_once",
      })),
    });
    const outcome = answer.outcome;
    await say(`chose ${outcome.outcome === "selected" ? outcome.optionId : "cancelled"}`);
    return { stopReason: "end_turn" as const };
  });

app.connect(ndJsonStream(Deno.stdout.writable, Deno.stdin.readable));
