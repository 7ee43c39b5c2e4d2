/**
 * The errors of MCP server support, apart from the client library so that mapping them costs
 * nothing when no session has MCP servers.
 *
 * @module
 */

/**
 * An MCP server of a session could not be connected: it did not start, exited, failed the
 * handshake or did not answer in time. The request that opened the session fails with it.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { McpStartError } from "./mcp_errors.ts";
 * const error = new McpStartError("files", "exited with code 3");
 * assert.equal(error.message, 'MCP server "files" did not start: exited with code 3');
 * ```
 */
export class McpStartError extends Error {
  /** The server's name (as used in tool names). */
  readonly server: string;

  /**
   * @param server The server's name
   * @param cause What went wrong, in words
   */
  constructor(server: string, cause: string) {
    super(`MCP server ${JSON.stringify(server)} did not start: ${cause}`);
    this.name = "McpStartError";
    this.server = server;
  }
}
