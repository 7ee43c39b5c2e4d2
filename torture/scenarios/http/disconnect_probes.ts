/**
 * Clients of the `http` scenario that hang up mid-request and mid-stream.
 *
 * @module
 */
import { pollUntil } from "../../../tests/_helpers/wait.ts";
import {
  bearer,
  type KeyedClient,
  rawHttp,
  rawRequest,
  request,
  type RfdClient,
} from "../../http_client.ts";
import { checkStatus, client, closeClient, connected, type Env, workspace } from "./_shared.ts";
import type { Probe } from "./probes.ts";

/** Clients that hang up mid-stream: the stream can be read again afterwards. */
export function disconnectProbes(): Probe[] {
  const reattach = async (
    env: Env,
    label: string,
    status: () => Promise<number>,
  ): Promise<void> => {
    let last = 0;
    // A released stream announces itself by no event: ask again until it is free.
    await pollUntil(async () => (last = await status()) === 200, {
      what: `${label}: the stream attachable again`,
      timeoutMs: 10_000,
      intervalMs: 50,
    }).catch(() => {});
    if (last !== 200) {
      env.context.fail("other", "stream-stuck", `${label}: a new reader got ${last}`);
    }
  };
  /** Opens a stream, reads its head, drops it; resolves with the status. */
  const touch = async (env: Env, url: string, headers: Record<string, string>): Promise<number> => {
    const controller = new AbortController();
    try {
      const response = await env.target.fetch(url, {
        headers: { ...headers, accept: "text/event-stream" },
        signal: controller.signal,
      });
      const status = response.status;
      controller.abort();
      await response.body?.cancel().catch(() => {});
      return status;
    } catch {
      return 0;
    }
  };
  return [
    {
      kind: "custom",
      label: "/acp: connection stream dropped, then read again",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "acp") as RfdClient;
        if (!(await connected(env, label, dropper))) return;
        // Its own reader goes; a raw reader takes the stream and vanishes mid-stream.
        dropper.vanish();
        await dropper.settled();
        const url = `${env.target.url}/acp`;
        const headers = { ...bearer(env.target), "acp-connection-id": dropper.connectionId ?? "" };
        await reattach(env, label, () => touch(env, url, headers));
        await rawHttp(env.target, [rawRequest(env.target, "GET /acp HTTP/1.1", [
          `Authorization: Bearer ${env.target.token}`,
          `Acp-Connection-Id: ${dropper.connectionId}`,
          "Accept: text/event-stream",
        ])], { waitMs: 500, hangUp: "destroy", hangUpAfterMs: 100 });
        await reattach(env, `${label} (raw)`, () => touch(env, url, headers));
        const answer = await request(env.target, url, { method: "DELETE", headers });
        checkStatus(env, `${label}: DELETE`, answer.status, [202]);
      },
    },
    {
      kind: "custom",
      label: "/v1/acp: event stream dropped, then read again",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "keyed") as KeyedClient;
        if (!(await connected(env, label, dropper))) return;
        const headers = bearer(env.target);
        await rawHttp(env.target, [rawRequest(env.target, `GET /v1/acp/${dropper.key} HTTP/1.1`, [
          `Authorization: Bearer ${env.target.token}`,
          "Accept: text/event-stream",
        ])], { waitMs: 500, hangUp: "destroy", hangUpAfterMs: 100 });
        await reattach(env, label, () => touch(env, dropper.url, headers));
        await closeClient(env, label, dropper);
      },
    },
    {
      kind: "custom",
      label: "/v1/acp: a prompt's POST dropped mid-request",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "keyed") as KeyedClient;
        if (!(await connected(env, label, dropper))) return;
        const cwd = await workspace(env, "dropped-post");
        const sessionId = await dropper.newSession(cwd);
        if (sessionId === undefined) {
          env.context.fail("other", "wedged", `${label}: no session`);
          return await closeClient(env, label, dropper);
        }
        const { id, message } = dropper.message("session/prompt", {
          sessionId,
          prompt: [{ type: "text", text: "dropped" }],
        });
        const body = JSON.stringify(message);
        await rawHttp(env.target, [rawRequest(env.target, `POST /v1/acp/${dropper.key} HTTP/1.1`, [
          `Authorization: Bearer ${env.target.token}`,
          "Content-Type: application/json",
        ], body)], { waitMs: 1_000, hangUp: "destroy", hangUpAfterMs: 20 });
        // The answer still goes out on the event stream, which is attached.
        if (!(await dropper.waitFor(() => dropper.responseOf(id) !== undefined, 15_000))) {
          env.context.fail(
            "other",
            "hang",
            `${label}: the prompt's answer never came on the stream`,
          );
        }
        await closeClient(env, label, dropper);
      },
    },
    {
      kind: "custom",
      label: "/acp: a POST body cut short, then gone",
      async run(env: Env): Promise<void> {
        const label = this.label;
        const dropper = client(env, "acp") as RfdClient;
        if (!(await connected(env, label, dropper))) return;
        await rawHttp(env.target, [rawRequest(
          env.target,
          "POST /acp HTTP/1.1",
          [
            `Authorization: Bearer ${env.target.token}`,
            "Content-Type: application/json",
            `Acp-Connection-Id: ${dropper.connectionId}`,
            "Content-Length: 500",
          ],
          '{"jsonrpc":"2.0","id":1,"method":"session/li',
          { length: false },
        )], {
          waitMs: 500,
          hangUp: "destroy",
          hangUpAfterMs: 50,
        });
        const answer = await dropper.call("session/list", {}, 10_000);
        if (answer.frame === undefined) {
          env.context.fail(
            "other",
            "wedged",
            `${label}: session/list afterwards: ${answer.status}`,
          );
        }
        await closeClient(env, label, dropper);
      },
    },
  ];
}
