/**
 * The errors of MCP server support, apart from the client library so that mapping them costs
 * nothing when no session has MCP servers.
 *
 * @module
 */

import { redactUrls } from "../util/redact_urls.ts";

/**
 * An MCP server of a session could not be connected: it did not start, exited, failed the
 * handshake or did not answer in time. The request that opened the session fails with it. URLs
 * in the cause are redacted (no user name or password, no credential-like query values): the
 * message goes to the client and the logs.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpStartError } from "./mcp_errors.ts";
 * const error = new McpStartError("files", "exited with code 3");
 * assert.equal(error.message, 'MCP server "files" did not start: exited with code 3');
 * assert.equal(
 *   new McpStartError("web", "fetch http://u:pw@127.0.0.1:1/mcp?token=t failed").message,
 *   'MCP server "web" did not start: fetch http://127.0.0.1:1/mcp?token=[redacted] failed',
 * );
 * ```
 */
export class McpStartError extends Error {
  /** The server's name (as used in tool names). */
  readonly server: string;

  /**
   * @param server The server's name
   * @param cause What went wrong, in words (URLs in it are redacted)
   */
  constructor(server: string, cause: string) {
    super(`MCP server ${JSON.stringify(server)} did not start: ${redactUrls(cause)}`);
    this.name = "McpStartError";
    this.server = server;
  }
}

/**
 * A declared MCP server (`params.mcpServers` of `session/new`, `session/load`, `session/resume`)
 * is not valid. The message names the entry and the field; the protocol layer answers it with
 * -32602 (invalid params), the message unchanged.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpDeclarationError } from "./mcp_errors.ts";
 * const error = new McpDeclarationError("mcpServers[0].name: must be a string, got number");
 * assert.ok(error instanceof TypeError);
 * assert.equal(error.message, "mcpServers[0].name: must be a string, got number");
 * ```
 */
export class McpDeclarationError extends TypeError {
  /** @param message Names the entry and field, then the problem */
  constructor(message: string) {
    super(message);
    this.name = "McpDeclarationError";
  }
}
