/**
 * A request body read in full under the transport's body limits (see {@link readBody}).
 *
 * @module
 */
import { problem } from "./_problem.ts";

/** A body may come in this many pieces whatever their size; beyond, they must average more. */
const BODY_PIECES = 4096;
/** The smallest average piece, in bytes, of a body in more than {@link BODY_PIECES} pieces. */
const BODY_PIECE_BYTES = 64;

/** A request whose body has been read, and the body. */
export interface ReadBody {
  readonly request: Request;
  readonly body: Uint8Array<ArrayBuffer>;
}

/**
 * Reads a request's body into one buffer, or answers the request: `413` when the body is longer
 * than `max` bytes (by its `Content-Length`, or as it arrives), `408` when it takes longer than
 * `timeoutMs` or comes in too many small pieces (a drip). Each piece is copied out as it arrives:
 * a runtime's read buffer is far bigger than a piece of one byte, and kept alive by it.
 *
 * @param request The request
 * @param max Largest body, in bytes
 * @param timeoutMs How long the body may take to arrive
 * @returns The body, or the answer to send instead
 */
export async function readBody(
  request: Request,
  max: number,
  timeoutMs: number,
): Promise<ReadBody | Response> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > max) {
    await request.body?.cancel().catch(() => {});
    return tooLarge(max);
  }
  if (!request.body) return { request, body: new Uint8Array(0) };
  // Grown as the bytes arrive, never beyond what came: a declared length is only a claim.
  let buffer = new Uint8Array(Math.min(declared > 0 ? declared : 1024, 64 * 1024));
  let size = 0;
  let pieces = 0;
  const reader = request.body.getReader();
  let late = false;
  const timer = setTimeout(() => {
    late = true;
    void reader.cancel().catch(() => {});
  }, timeoutMs);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (late) return slowBody(`it did not arrive within ${timeoutMs / 1000} s`);
      if (done) break;
      pieces++;
      if (size + value.byteLength > max) {
        await reader.cancel().catch(() => {});
        return tooLarge(max);
      }
      if (size + value.byteLength > buffer.byteLength) buffer = grow(buffer, size, value, max);
      buffer.set(value, size);
      size += value.byteLength;
      if (pieces > BODY_PIECES && size < pieces * BODY_PIECE_BYTES) {
        await reader.cancel().catch(() => {});
        return slowBody(`it came in ${pieces} pieces of ${Math.floor(size / pieces)} bytes or so`);
      }
    }
  } catch {
    if (late) return slowBody(`it did not arrive within ${timeoutMs / 1000} s`);
    return problem(400, "Bad Request", "The request body could not be read");
  } finally {
    clearTimeout(timer);
  }
  return { request, body: size === buffer.byteLength ? buffer : buffer.slice(0, size) };
}

/** A buffer with room for `size` bytes of `buffer` and then `next`: doubled, at most `max`. */
function grow(
  buffer: Uint8Array<ArrayBuffer>,
  size: number,
  next: Uint8Array,
  max: number,
): Uint8Array<ArrayBuffer> {
  const grown = new Uint8Array(
    Math.min(max, Math.max(size + next.byteLength, buffer.byteLength * 2)),
  );
  grown.set(buffer.subarray(0, size));
  return grown;
}

function tooLarge(max: number): Response {
  return problem(
    413,
    "Payload Too Large",
    `A message may be at most ${max} bytes (see --max-message-bytes)`,
  );
}

/** `408` for a body that came too slowly; the connection is closed after it. */
function slowBody(why: string): Response {
  const response = problem(
    408,
    "Request Timeout",
    `The request body came too slowly: ${why} (see --body-timeout)`,
  );
  response.headers.set("Connection", "close");
  return response;
}
