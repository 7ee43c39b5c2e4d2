import { agent, type AgentApp, methods } from "@agentclientprotocol/sdk";
import type { ConnectionContext, SessionHandlers } from "./connection_context.ts";
import { authenticate } from "./auth_methods.ts";
import { initialize } from "./handlers/initialize.ts";
import { parseSteeringRequest, SESSION_STEERING_METHOD } from "./steering_request.ts";

/** `session/fork` (unstable: the SDK's stable `methods` do not name it). */
const SESSION_FORK = "session/fork";

/**
 * The ACP methods the server answers, each routed to its handler in `./handlers/`. Requests that
 * wait on anything are tracked, so a draining connection waits for their answers.
 *
 * `initialize` is answered at once; the session methods run on the connection's session side,
 * which is loaded by the first of them or just after the `initialize` answer is written.
 *
 * @param connection The connection the handlers act on
 * @returns The SDK app to connect to the connection's streams
 */
export function agentApp(connection: ConnectionContext): AgentApp {
  const track = connection.track.bind(connection);
  // At once when the session side is loaded, so that its handlers see messages as before.
  const sessions = <R>(run: (side: SessionHandlers) => R | Promise<R>): R | Promise<R> => {
    const side = connection.loadedSessionSide;
    return side ? run(side) : connection.sessionSide().then(run);
  };
  return agent({ name: "acp-harness" })
    .onRequest(methods.agent.initialize, ({ params, requestId }) => {
      // Once the answer is on its way, load what the session methods need.
      connection.afterAnswer(requestId, () => connection.preloadSessionSide());
      return initialize(connection, params);
    })
    .onRequest(methods.agent.authenticate, ({ params }) => {
      authenticate(connection.server.catalog, params.methodId);
      return {};
    })
    .onRequest(
      methods.agent.session.new,
      ({ params, requestId }) =>
        track(sessions((side) => side.newSession(connection, params, requestId))),
    )
    .onRequest(
      methods.agent.session.prompt,
      ({ params, signal, requestId }) =>
        track(sessions((side) => side.prompt(connection, params, { signal, requestId }))),
    )
    .onRequest(
      methods.agent.session.load,
      ({ params, requestId }) =>
        track(sessions((side) => side.loadSession(connection, params, requestId))),
    )
    .onRequest(
      methods.agent.session.resume,
      ({ params, requestId }) =>
        track(sessions((side) => side.resumeSession(connection, params, requestId))),
    )
    .onRequest(
      methods.agent.session.list,
      ({ params }) => track(sessions((side) => side.listSessions(connection, params))),
    )
    .onRequest(
      SESSION_FORK,
      // The handler checks the params (the SDK's stable entrypoint has no schema for them).
      (params: unknown) => params,
      ({ params, requestId }) =>
        track(sessions((side) => side.forkSession(connection, params, requestId))),
    )
    .onRequest(
      methods.agent.session.close,
      ({ params }) => track(sessions((side) => side.closeSession(connection, params))),
    )
    .onRequest(
      methods.agent.session.delete,
      ({ params }) => track(sessions((side) => side.deleteSession(connection, params))),
    )
    // Before the session side is loaded there is no session to cancel.
    .onNotification(
      methods.agent.session.cancel,
      ({ params }) => connection.loadedSessionSide?.cancel(connection, params),
    )
    .onRequest(
      methods.agent.session.setConfigOption,
      // Tracked: a change to a session still being written waits for the write.
      ({ params }) => track(sessions((side) => side.setConfigOption(connection, params))),
    )
    .onRequest(
      methods.agent.session.setMode,
      ({ params }) => track(sessions((side) => side.setMode(connection, params))),
    )
    // The steering extension (`_meta.steering.supported` in the `initialize` answer).
    .onRequest(
      SESSION_STEERING_METHOD,
      parseSteeringRequest,
      ({ params, signal, requestId }) =>
        track(sessions((side) => side.steerSession(connection, params, { signal, requestId }))),
    );
}
