/**
 * `acp-harness hash-token`: prints the hash of a bearer token as a tenants file keeps it.
 *
 * @module
 */
import { HASH_TOKEN_USAGE } from "../config/usage.ts";
import { hashToken } from "../server/tenants.ts";

/** Most bytes of stdin read for the token's line. */
const MAX_TOKEN_BYTES = 64 * 1024;

/** What {@link hashTokenCommand} reads and writes. */
export interface HashTokenIo {
  /** Where the token comes from (its first line). */
  readonly stdin: ReadableStream<Uint8Array>;
  /** Where the hash goes. */
  readonly stdout: WritableStream<Uint8Array>;
  /** Where a failure is said. */
  writeStderr(text: string): void;
}

/**
 * Reads the first line of stdin (white space around it dropped) and prints `sha256:<hex>` and a
 * newline; with `help`, prints the command's usage instead.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { hashTokenCommand } from "./hash_token_command.ts";
 * let printed = "";
 * const code = await hashTokenCommand({
 *   stdin: ReadableStream.from([new TextEncoder().encode("abc\n")]),
 *   stdout: new WritableStream({ write: (bytes) => void (printed += new TextDecoder().decode(bytes)) }),
 *   writeStderr: () => {},
 * }, false);
 * assert.equal(code, 0);
 * assert.equal(printed, "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n");
 * ```
 *
 * @param io Standard input, output and error
 * @param help Whether to print the usage
 * @returns The exit code: 0, or 2 when stdin holds no token
 */
export async function hashTokenCommand(io: HashTokenIo, help: boolean): Promise<number> {
  const writer = io.stdout.getWriter();
  try {
    if (help) {
      await writer.write(new TextEncoder().encode(HASH_TOKEN_USAGE));
      return 0;
    }
    const token = await firstLine(io.stdin);
    if (token === "") {
      io.writeStderr("acp-harness hash-token: no token on stdin (give it as the first line)\n");
      return 2;
    }
    await writer.write(new TextEncoder().encode(`${await hashToken(token)}\n`));
    return 0;
  } finally {
    await writer.close().catch(() => {});
  }
}

/** The first line of a stream (at most {@link MAX_TOKEN_BYTES} read), trimmed. */
async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  let text = "";
  let bytes = 0;
  try {
    while (!text.includes("\n") && bytes < MAX_TOKEN_BYTES) {
      const { value, done } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      text += decoder.decode(value, { stream: true });
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return (text.split("\n")[0] ?? "").trim();
}
