/**
 * Internal text helpers for tools: UTF-8 byte counting and safe truncation.
 *
 * @module
 */

const decoder = new TextDecoder();

/** The UTF-8 length of `text` in bytes. */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let index = 0; index < text.length; index++) {
    const code = text.charCodeAt(index);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && index + 1 < text.length) {
      const next = text.charCodeAt(index + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 4;
        index++;
      } else bytes += 3;
    } else bytes += 3;
  }
  return bytes;
}

/** Whether `byte` continues a UTF-8 sequence (`10xxxxxx`). */
function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/**
 * The length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence, so the
 * rest can be carried over to the next chunk.
 */
export function completeUtf8Length(bytes: Uint8Array): number {
  const end = bytes.length;
  // Look back at most 3 bytes for the lead byte of the last sequence.
  for (let back = 1; back <= Math.min(4, end); back++) {
    const byte = bytes[end - back] as number;
    if (isContinuation(byte)) continue;
    const needed = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return needed > back ? end - back : end;
  }
  return end;
}

/** Decodes the last `maxBytes` bytes of `bytes`, starting at a character boundary. */
export function decodeTail(bytes: Uint8Array, maxBytes: number): string {
  let start = Math.max(0, bytes.length - maxBytes);
  let skipped = start === 0 ? 3 : 0;
  while (start < bytes.length && skipped < 3 && isContinuation(bytes[start] as number)) {
    start++;
    skipped++;
  }
  return decoder.decode(bytes.subarray(start));
}

/** `text` quoted as a JSON string, for naming values in messages. */
export function quote(text: string): string {
  return JSON.stringify(text);
}

/** `text` cut to `maxChars` characters with an ellipsis. */
export function shorten(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, Math.max(0, maxChars - 1))}…`;
}

/** `1 line` / `3 lines` (or the given plural form). */
export function plural(count: number, noun: string, nouns = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nouns}`;
}
