import type {
  SetSessionConfigOptionRequest,
  SetSessionConfigOptionResponse,
  SetSessionModeRequest,
  SetSessionModeResponse,
} from "@agentclientprotocol/sdk";
import type { Session } from "../../session/session.ts";
import type { ConnectionContext } from "../connection_context.ts";
import { invalid, toRequestError } from "../request_errors.ts";

/**
 * `session/set_config_option`: changes the model, effort or mode of a session.
 *
 * @param connection The connection
 * @param params The request
 * @returns Every config option, with its new value
 */
export function setConfigOption(
  connection: ConnectionContext,
  params: SetSessionConfigOptionRequest,
): SetSessionConfigOptionResponse | Promise<SetSessionConfigOptionResponse> {
  const session = connection.requireSession(params.sessionId);
  if ("type" in params && params.type === "boolean") {
    throw invalid(`type: config option "${params.configId}" is a select; send a string value`);
  }
  return afterCreated(session, () => {
    try {
      return { configOptions: session.setConfigOption(params.configId, params.value) };
    } catch (error) {
      throw toRequestError(error);
    }
  });
}

/**
 * `session/set_mode`: changes the permission mode of a session.
 *
 * @param connection The connection
 * @param params The request
 * @returns An empty answer
 */
export function setMode(
  connection: ConnectionContext,
  params: SetSessionModeRequest,
): SetSessionModeResponse | Promise<SetSessionModeResponse> {
  const session = connection.requireSession(params.sessionId);
  return afterCreated(session, () => {
    try {
      session.setMode(params.modeId);
    } catch (error) {
      throw toRequestError(error);
    }
    return {};
  });
}

/**
 * Runs `apply` at once, or once a new session is written to the store: a config change is
 * recorded and shown together, and its update must not go out before the session's log exists.
 */
function afterCreated<R>(session: Session, apply: () => R): R | Promise<R> {
  const created = session.created;
  return created === undefined ? apply() : created.then(apply);
}
