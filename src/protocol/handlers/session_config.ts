import type {
  SetSessionConfigOptionRequest,
  SetSessionConfigOptionResponse,
  SetSessionModeRequest,
  SetSessionModeResponse,
} from "@agentclientprotocol/sdk";
import type { ConnectionContext } from "../connection.ts";
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
): SetSessionConfigOptionResponse {
  const session = connection.requireSession(params.sessionId);
  if ("type" in params && params.type === "boolean") {
    throw invalid(`type: config option "${params.configId}" is a select; send a string value`);
  }
  try {
    return { configOptions: session.setConfigOption(params.configId, params.value) };
  } catch (error) {
    throw toRequestError(error);
  }
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
): SetSessionModeResponse {
  const session = connection.requireSession(params.sessionId);
  try {
    session.setMode(params.modeId);
  } catch (error) {
    throw toRequestError(error);
  }
  return {};
}
