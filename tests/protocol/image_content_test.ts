import assert from "node:assert/strict";
import {
  admitImage,
  MAX_IMAGE_BYTES,
  MAX_IMAGES_PER_PROMPT,
} from "../../src/protocol/image_content.ts";
import { PromptContentError } from "../../src/util/prompt_content_error.ts";

function base64(bytes: readonly number[]): string {
  return btoa(String.fromCharCode(...bytes));
}

function ascii(text: string): number[] {
  return [...text].map((char) => char.charCodeAt(0));
}

const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff, 0xe0];
const GIF87 = ascii("GIF87a");
const GIF89 = ascii("GIF89a");
const WEBP = [...ascii("RIFF"), 0x24, 0x00, 0x00, 0x00, ...ascii("WEBPVP8 ")];

/** Asserts that admitting the image throws a PromptContentError containing each of `parts`. */
function assertRejected(
  image: { data: string; mimeType: string },
  parts: readonly string[],
  where = "prompt[2]",
): void {
  assert.throws(() => admitImage(image, where), (error: unknown) => {
    assert.ok(error instanceof PromptContentError, `expected PromptContentError: ${error}`);
    assert.ok(error instanceof TypeError);
    assert.ok(error.message.startsWith(`${where}: `), `"${error.message}" does not name ${where}`);
    for (const part of parts) {
      assert.ok(error.message.includes(part), `"${error.message}" does not mention "${part}"`);
    }
    return true;
  });
}

Deno.test("MAX_IMAGE_BYTES is 20 MiB and MAX_IMAGES_PER_PROMPT is 20", () => {
  assert.equal(MAX_IMAGE_BYTES, 20 * 1024 * 1024);
  assert.equal(MAX_IMAGES_PER_PROMPT, 20);
});

Deno.test("admitImage() accepts PNG, JPEG, GIF and WebP by their signatures", () => {
  const cases: ReadonlyArray<readonly [string, readonly number[]]> = [
    ["image/png", PNG],
    ["image/png", [...PNG, 0, 0, 0, 13, ...ascii("IHDR")]],
    ["image/jpeg", JPEG],
    ["image/jpeg", [0xff, 0xd8, 0xff]],
    ["image/gif", GIF87],
    ["image/gif", [...GIF89, 1, 0, 1, 0]],
    ["image/webp", WEBP],
  ];
  for (const [mimeType, bytes] of cases) {
    const data = base64(bytes);
    assert.deepEqual(
      admitImage({ data, mimeType }, "prompt[0]"),
      { type: "image", mimeType, data },
      `${mimeType} ${data}`,
    );
  }
});

Deno.test("admitImage() accepts canonical base64 that uses + and /", () => {
  const data = base64([...PNG, 0xfb, 0xff, 0xbf]);
  assert.match(data, /[+/]/);
  assert.equal(admitImage({ data, mimeType: "image/png" }, "x").type, "image");
});

Deno.test("admitImage() rejects an unsupported MIME type naming it", () => {
  const data = base64(PNG);
  for (const mimeType of ["image/svg+xml", "image/bmp", "application/octet-stream", "", "png"]) {
    assertRejected({ data, mimeType }, [
      "image/png, image/jpeg, image/webp or image/gif",
      JSON.stringify(mimeType),
    ]);
  }
});

Deno.test("admitImage() rejects base64 with whitespace", () => {
  const data = base64([...PNG, 1, 2, 3, 4, 5, 6]);
  for (const bad of [`${data.slice(0, 8)}\n${data.slice(8)}`, ` ${data}`, `${data}\n`]) {
    assertRejected({ data: bad, mimeType: "image/png" }, ["canonical base64"]);
  }
});

Deno.test("admitImage() rejects the URL-safe base64 alphabet", () => {
  const data = base64([...PNG, 0xfb, 0xff, 0xbf]);
  const urlSafe = data.replaceAll("+", "-").replaceAll("/", "_");
  assert.notEqual(urlSafe, data);
  assertRejected({ data: urlSafe, mimeType: "image/png" }, ["canonical base64"]);
});

Deno.test("admitImage() rejects base64 without its padding", () => {
  assertRejected({ data: "iVBORw0KGgo", mimeType: "image/png" }, ["canonical base64"]);
  assertRejected({ data: "/9j/4A", mimeType: "image/jpeg" }, ["canonical base64"]);
  assertRejected({ data: "/9j/4A=", mimeType: "image/jpeg" }, ["canonical base64"]);
});

Deno.test("admitImage() rejects base64 with non-zero padding bits", () => {
  // Same bytes as "iVBORw0KGgo=" and "/9j/4A==", but the unused low bits are set.
  assert.equal(atob("iVBORw0KGgp="), atob("iVBORw0KGgo="));
  assertRejected({ data: "iVBORw0KGgp=", mimeType: "image/png" }, ["canonical base64"]);
  assert.equal(atob("/9j/4B=="), atob("/9j/4A=="));
  assertRejected({ data: "/9j/4B==", mimeType: "image/jpeg" }, ["canonical base64"]);
});

Deno.test("admitImage() rejects other malformed base64", () => {
  for (const data of ["", "iVBO=w0KGgo=", "iVBORw0KGgo==", "iVBORw0K*go=", "====", "iVB"]) {
    assertRejected({ data, mimeType: "image/png" }, ["canonical base64"]);
  }
});

Deno.test("admitImage() rejects bytes whose signature does not match the MIME type", () => {
  const cases: ReadonlyArray<readonly [string, readonly number[]]> = [
    ["image/jpeg", PNG],
    ["image/png", JPEG],
    ["image/gif", ascii("GIF88a")],
    ["image/gif", ascii("GIF89b")],
    ["image/webp", [...ascii("RIFF"), 0, 0, 0, 0, ...ascii("WAVE")]],
    ["image/png", PNG.slice(0, 7)],
    ["image/webp", WEBP.slice(0, 11)],
    ["image/png", ascii("hello, world")],
  ];
  for (const [mimeType, bytes] of cases) {
    assertRejected({ data: base64(bytes), mimeType }, [
      `image bytes are not ${mimeType}`,
      "signature",
    ]);
  }
});

Deno.test("admitImage() rejects data over MAX_IMAGE_BYTES before decoding it", () => {
  // 4 characters of base64 carry 3 bytes: this is one byte over the limit.
  const over = "A".repeat(Math.ceil((MAX_IMAGE_BYTES + 1) / 3) * 4);
  assertRejected({ data: over, mimeType: "image/png" }, [
    `image is ${MAX_IMAGE_BYTES + 1} bytes`,
    `${MAX_IMAGE_BYTES} bytes`,
  ]);
  // Not even valid base64: the size is checked first.
  const invalid = "*".repeat(MAX_IMAGE_BYTES * 2);
  assertRejected({ data: invalid, mimeType: "image/png" }, ["the limit is"]);
});

Deno.test("admitImage() accepts a 4 MiB image", () => {
  const head = base64([...PNG, 0]);
  const data = `${head}${"A".repeat(Math.floor(4 * 1024 * 1024 / 3) * 4)}`;
  const part = admitImage({ data, mimeType: "image/png" }, "prompt[0]");
  assert.equal(part.type, "image");
});

Deno.test("admitImage() accepts an image of exactly MAX_IMAGE_BYTES", () => {
  // 9 bytes of header (12 chars), then zero bytes up to the limit (2 of them in a padded group).
  const head = base64([...PNG, 0]);
  const rest = MAX_IMAGE_BYTES - 9;
  assert.equal(rest % 3, 2);
  const data = `${head}${"A".repeat(Math.floor(rest / 3) * 4)}AAA=`;
  assert.equal((data.length / 4) * 3 - 1, MAX_IMAGE_BYTES);
  const part = admitImage({ data, mimeType: "image/png" }, "prompt[0]");
  assert.equal(part.type, "image");
});

Deno.test("admitImage() names the where argument in every message", () => {
  for (const where of ["prompt[0]", "prompt[19]", "attachment"]) {
    assertRejected({ data: base64(PNG), mimeType: "image/tiff" }, ["mimeType"], where);
    assertRejected({ data: "iVBORw0KGgo", mimeType: "image/png" }, ["base64"], where);
    assertRejected({ data: base64(JPEG), mimeType: "image/png" }, ["signature"], where);
    assertRejected({ data: "A".repeat(MAX_IMAGE_BYTES * 2), mimeType: "image/png" }, [
      "limit",
    ], where);
  }
});
