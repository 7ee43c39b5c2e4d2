import assert from "node:assert/strict";
import type { ContentBlock } from "../../src/transport/acp_types.ts";
import {
  admitPrompt,
  type PromptCapabilities,
  PromptContentError,
} from "../../src/protocol/prompt_content.ts";

const CAPABILITIES: PromptCapabilities = { image: false, audio: false, embeddedContext: true };

const IMAGE: ContentBlock = { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" };
const AUDIO: ContentBlock = { type: "audio", mimeType: "audio/wav", data: "UklGRg==" };
const BLOB: ContentBlock = {
  type: "resource",
  resource: { uri: "file:///bin.dat", blob: "AAEC", mimeType: "application/octet-stream" },
};

/** Asserts that admitting `blocks` throws a PromptContentError containing each of `parts`. */
function assertRejected(
  blocks: readonly ContentBlock[],
  parts: readonly string[],
  capabilities: PromptCapabilities = CAPABILITIES,
): void {
  assert.throws(() => admitPrompt(blocks, capabilities), (error: unknown) => {
    assert.ok(error instanceof PromptContentError, `expected PromptContentError: ${error}`);
    assert.ok(error instanceof TypeError);
    assert.equal(error.name, "PromptContentError");
    for (const part of parts) {
      assert.ok(error.message.includes(part), `"${error.message}" does not mention "${part}"`);
    }
    return true;
  });
}

Deno.test("admitPrompt() returns a single text block as one text part", () => {
  assert.deepEqual(admitPrompt([{ type: "text", text: "hello" }], CAPABILITIES), [
    { type: "text", text: "hello" },
  ]);
});

Deno.test("admitPrompt() joins adjacent text blocks without a separator", () => {
  assert.deepEqual(
    admitPrompt([
      { type: "text", text: "Hello, " },
      { type: "text", text: "world" },
      { type: "text", text: "!" },
    ], CAPABILITIES),
    [{ type: "text", text: "Hello, world!" }],
  );
});

Deno.test("admitPrompt() renders a resource link on its own line", () => {
  assert.deepEqual(
    admitPrompt([{ type: "resource_link", name: "a", uri: "b" }], CAPABILITIES),
    [{ type: "text", text: '\n[resource_link name="a" uri="b"]\n' }],
  );
});

Deno.test("admitPrompt() keeps wire order when mixing text and resource links", () => {
  assert.deepEqual(
    admitPrompt([
      { type: "text", text: "Read" },
      { type: "resource_link", name: "a.txt", uri: "file:///w/a.txt", mimeType: "text/plain" },
      { type: "text", text: "then" },
      { type: "resource_link", name: 'odd "name"', uri: "file:///w/b c.txt" },
    ], CAPABILITIES),
    [{
      type: "text",
      text: 'Read\n[resource_link name="a.txt" uri="file:///w/a.txt"]\nthen' +
        '\n[resource_link name="odd \\"name\\"" uri="file:///w/b c.txt"]\n',
    }],
  );
});

Deno.test("admitPrompt() renders an embedded text resource as a context block", () => {
  assert.deepEqual(
    admitPrompt([
      { type: "text", text: "Review:" },
      {
        type: "resource",
        resource: { uri: "file:///w/main.ts", text: "let x = 1;", mimeType: "text/x-typescript" },
      },
    ], CAPABILITIES),
    [{
      type: "text",
      text: 'Review:\n[resource uri="file:///w/main.ts"]\nlet x = 1;\n[/resource]\n',
    }],
  );
});

Deno.test("admitPrompt() accepts a prompt of only a resource link", () => {
  const parts = admitPrompt([{ type: "resource_link", name: "n", uri: "u" }], CAPABILITIES);
  assert.equal(parts.length, 1);
});

Deno.test("admitPrompt() rejects an empty prompt", () => {
  assertRejected([], ["prompt", "at least one content block"]);
});

Deno.test("admitPrompt() rejects a prompt without any text", () => {
  assertRejected([{ type: "text", text: "" }], ["prompt", "empty"]);
  assertRejected([{ type: "text", text: "  " }, { type: "text", text: "\n\t" }], ["empty"]);
});

Deno.test("admitPrompt() rejects an image block naming its index", () => {
  assertRejected([{ type: "text", text: "see" }, IMAGE], ["prompt[1]", "image"]);
});

Deno.test("admitPrompt() rejects an audio block naming its index", () => {
  assertRejected([AUDIO, { type: "text", text: "hear" }], ["prompt[0]", "audio"]);
});

Deno.test("admitPrompt() rejects a blob resource naming its index and uri", () => {
  assertRejected(
    [{ type: "text", text: "a" }, { type: "text", text: "b" }, BLOB],
    ["prompt[2]", "file:///bin.dat", "blob"],
  );
});

Deno.test("admitPrompt() rejects embedded resources when embeddedContext is off", () => {
  const text: ContentBlock = { type: "resource", resource: { uri: "file:///a", text: "x" } };
  assertRejected([{ type: "text", text: "t" }, text], ["prompt[1]", "embeddedContext"], {
    ...CAPABILITIES,
    embeddedContext: false,
  });
});

Deno.test("admitPrompt() rejects an unknown block type naming its index and type", () => {
  const unknown = { type: "video", uri: "x" } as unknown as ContentBlock;
  assertRejected([{ type: "text", text: "t" }, unknown], ["prompt[1]", '"video"']);
});

Deno.test("admitPrompt() reports the first bad block", () => {
  assertRejected([{ type: "text", text: "ok" }, AUDIO, IMAGE], ["prompt[1]", "audio"]);
});

Deno.test("admitPrompt() validates every block before returning", () => {
  // A bad block after plenty of good text still rejects the whole prompt.
  assertRejected(
    [
      { type: "text", text: "good" },
      { type: "resource_link", name: "a", uri: "b" },
      { type: "text", text: "more" },
      IMAGE,
    ],
    ["prompt[3]"],
  );
  // And an empty-text check does not hide a bad block.
  assertRejected([{ type: "text", text: "" }, BLOB], ["prompt[1]"]);
});

// Images

const WITH_IMAGES: PromptCapabilities = { ...CAPABILITIES, image: true };
const VISION = { id: "openai/vision", image: true };
const JPEG: ContentBlock = { type: "image", mimeType: "image/jpeg", data: "/9j/4A==" };

Deno.test("admitPrompt() accepts an image when advertised and the model accepts images", () => {
  assert.deepEqual(admitPrompt([{ type: "text", text: "see" }, IMAGE], WITH_IMAGES, VISION), [
    { type: "text", text: "see" },
    { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
  ]);
});

Deno.test("admitPrompt() rejects an image the session's model does not accept", () => {
  assert.throws(
    () =>
      admitPrompt([{ type: "text", text: "see" }, IMAGE], WITH_IMAGES, {
        id: "deepseek/deepseek-v4-pro",
        image: false,
      }),
    (error: unknown) => {
      assert.ok(error instanceof PromptContentError);
      assert.match(error.message, /^prompt\[1\]: /);
      assert.match(error.message, /"deepseek\/deepseek-v4-pro" does not accept images/);
      return true;
    },
  );
  // Without a model, images are refused too.
  assert.throws(() => admitPrompt([IMAGE], WITH_IMAGES), PromptContentError);
});

Deno.test("admitPrompt() rejects an image when promptCapabilities.image is off, whatever the model", () => {
  assert.throws(() => admitPrompt([{ type: "text", text: "x" }, IMAGE], CAPABILITIES, VISION), {
    name: "PromptContentError",
    message: /prompt\[1\]: .*promptCapabilities\.image is false/,
  });
});

Deno.test("admitPrompt() keeps images in wire order between joined text", () => {
  assert.deepEqual(
    admitPrompt(
      [
        { type: "text", text: "Compare " },
        { type: "text", text: "these:" },
        IMAGE,
        { type: "text", text: "and" },
        JPEG,
        IMAGE,
        { type: "resource_link", name: "a", uri: "b" },
        { type: "text", text: "done" },
      ],
      WITH_IMAGES,
      VISION,
    ),
    [
      { type: "text", text: "Compare these:" },
      { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
      { type: "text", text: "and" },
      { type: "image", mimeType: "image/jpeg", data: "/9j/4A==" },
      { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
      { type: "text", text: '\n[resource_link name="a" uri="b"]\ndone' },
    ],
  );
});

Deno.test("admitPrompt() accepts a prompt of only an image", () => {
  assert.deepEqual(admitPrompt([IMAGE], WITH_IMAGES, VISION), [
    { type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" },
  ]);
  assert.deepEqual(
    admitPrompt(
      [{ type: "text", text: "" }, JPEG, { type: "text", text: "" }],
      WITH_IMAGES,
      VISION,
    ),
    [{ type: "image", mimeType: "image/jpeg", data: "/9j/4A==" }],
  );
});

Deno.test("admitPrompt() accepts 20 images and rejects 21", () => {
  const twenty = Array.from({ length: 20 }, () => IMAGE);
  assert.equal(admitPrompt(twenty, WITH_IMAGES, VISION).length, 20);
  assert.throws(() => admitPrompt([...twenty, JPEG], WITH_IMAGES, VISION), (error: unknown) => {
    assert.ok(error instanceof PromptContentError);
    assert.match(error.message, /21 images/);
    assert.match(error.message, /at most 20/);
    return true;
  });
});

Deno.test("admitPrompt() rejects a bad image naming its index", () => {
  const cases: ReadonlyArray<readonly [ContentBlock, RegExp]> = [
    [{ type: "image", mimeType: "image/png", data: "iVBORw0KGgo" }, /canonical base64/],
    [{ type: "image", mimeType: "image/tiff", data: "iVBORw0KGgo=" }, /mimeType/],
    [{ type: "image", mimeType: "image/jpeg", data: "iVBORw0KGgo=" }, /signature/],
  ];
  for (const [block, reason] of cases) {
    assert.throws(
      () => admitPrompt([{ type: "text", text: "a" }, IMAGE, block], WITH_IMAGES, VISION),
      (error: unknown) => {
        assert.ok(error instanceof PromptContentError);
        assert.match(error.message, /^prompt\[2\]: /);
        assert.match(error.message, reason);
        return true;
      },
    );
  }
});
