import { agent, type AgentApp, methods } from "@agentclientprotocol/sdk";
import type { ConnectionContext } from "./connection.ts";
import { initialize } from "./handlers/initialize.ts";
import { cancel } from "./handlers/session_cancel.ts";
import { closeSession, deleteSession } from "./handlers/session_close.ts";
import { setConfigOption, setMode } from "./handlers/session_config.ts";
import { listSessions } from "./handlers/session_list.ts";
import { loadSession, resumeSession } from "./handlers/session_load.ts";
import { newSession } from "./handlers/session_new.ts";
import { prompt } from "./handlers/session_prompt.ts";

/**
 * The ACP methods the server answers, each routed to its handler in `./handlers/`. Requests that
 * wait on anything are tracked, so a draining connection waits for their answers.
 *
 * @param connection The connection the handlers act on
 * @returns The SDK app to connect to the connection's streams
 */
export function agentApp(connection: ConnectionContext): AgentApp {
  const track = connection.track.bind(connection);
  return agent({ name: "acp-harness" })
    .onRequest(methods.agent.initialize, ({ params }) => initialize(connection, params))
    .onRequest(methods.agent.authenticate, () => ({}))
    .onRequest(
      methods.agent.session.new,
      ({ params, requestId }) => track(newSession(connection, params, requestId)),
    )
    .onRequest(
      methods.agent.session.prompt,
      ({ params, signal, requestId }) => track(prompt(connection, params, { signal, requestId })),
    )
    .onRequest(
      methods.agent.session.load,
      ({ params, requestId }) => track(loadSession(connection, params, requestId)),
    )
    .onRequest(
      methods.agent.session.resume,
      ({ params, requestId }) => track(resumeSession(connection, params, requestId)),
    )
    .onRequest(methods.agent.session.list, ({ params }) => track(listSessions(connection, params)))
    .onRequest(
      methods.agent.session.close,
      ({ params }) => track(closeSession(connection, params)),
    )
    .onRequest(
      methods.agent.session.delete,
      ({ params }) => track(deleteSession(connection, params)),
    )
    .onNotification(methods.agent.session.cancel, ({ params }) => cancel(connection, params))
    .onRequest(
      methods.agent.session.setConfigOption,
      ({ params }) => setConfigOption(connection, params),
    )
    .onRequest(methods.agent.session.setMode, ({ params }) => setMode(connection, params));
}
