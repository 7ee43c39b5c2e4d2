import type { LlmContentPart } from "../llm/provider.ts";
import { PromptContentError } from "../util/prompt_content_error.ts";

/** Largest decoded image accepted, in bytes. */
export const MAX_IMAGE_BYTES: number = 20 * 1024 * 1024;

/** Most images in one prompt. */
export const MAX_IMAGES_PER_PROMPT = 20;

const SIGNATURES: Readonly<Record<string, (bytes: Uint8Array) => boolean>> = {
  "image/png": (b) =>
    b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47 &&
    b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a,
  "image/jpeg": (b) => b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  "image/gif": (b) =>
    b.length >= 6 && ascii(b, 0, 4) === "GIF8" && (b[4] === 0x37 || b[4] === 0x39) &&
    b[5] === 0x61,
  "image/webp": (b) => b.length >= 12 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 12) === "WEBP",
};

// Character classes only (a repeated group overflows the regex stack on megabytes of data); the
// length and the decode/encode round trip below complete the canonical check.
const BASE64_ALPHABET = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Checks one image block: PNG, JPEG, WebP or GIF; canonical base64 (no whitespace, no URL-safe
 * alphabet, zero padding bits); at most {@link MAX_IMAGE_BYTES} decoded; and bytes whose
 * signature matches `mimeType`.
 *
 * @example A valid PNG header
 * ```ts
 * import assert from "node:assert/strict";
 * import { admitImage } from "./image_content.ts";
 * const part = admitImage({ data: "iVBORw0KGgo=", mimeType: "image/png" }, "prompt[0]");
 * assert.equal(part.type, "image");
 * ```
 *
 * @param image The block's data and MIME type
 * @param where Names the block in error messages
 * @returns The image part for the model
 * @throws {PromptContentError} Naming the block and the reason
 */
export function admitImage(
  image: { readonly data: string; readonly mimeType: string },
  where: string,
): LlmContentPart {
  const matches = SIGNATURES[image.mimeType];
  if (!matches) {
    throw new PromptContentError(
      `${where}: image mimeType must be image/png, image/jpeg, image/webp or image/gif, got ${
        JSON.stringify(image.mimeType)
      }`,
    );
  }
  const { data } = image;
  const padding = data.endsWith("==") ? 2 : data.endsWith("=") ? 1 : 0;
  const size = Math.floor(data.length / 4) * 3 - padding;
  if (size > MAX_IMAGE_BYTES) {
    throw new PromptContentError(
      `${where}: image is ${size} bytes; the limit is ${MAX_IMAGE_BYTES} bytes (20 MiB)`,
    );
  }
  if (data.length === 0 || data.length % 4 !== 0 || !BASE64_ALPHABET.test(data)) {
    throw new PromptContentError(`${where}: image data must be canonical base64`);
  }
  let bytes: Uint8Array;
  try {
    const binary = atob(data);
    if (btoa(binary) !== data) throw new TypeError("not canonical");
    bytes = Uint8Array.from(binary.slice(0, 16), (char) => char.charCodeAt(0));
  } catch {
    throw new PromptContentError(`${where}: image data must be canonical base64`);
  }
  if (!matches(bytes)) {
    throw new PromptContentError(
      `${where}: image bytes are not ${image.mimeType} (the file signature does not match)`,
    );
  }
  return { type: "image", mimeType: image.mimeType, data };
}

function ascii(bytes: Uint8Array, from: number, to: number): string {
  return String.fromCharCode(...bytes.subarray(from, to));
}
