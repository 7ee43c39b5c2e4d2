import type { LlmContentPart } from "../llm/provider.ts";
import type { ContentBlock } from "../transport/acp_types.ts";
import { admitImage, MAX_IMAGES_PER_PROMPT } from "./image_content.ts";
import { PromptContentError } from "../util/prompt_content_error.ts";

export { PromptContentError };

/** What the server accepts in prompts. */
export interface PromptCapabilities {
  readonly image: boolean;
  readonly audio: boolean;
  readonly embeddedContext: boolean;
}

/** What the session's model accepts, checked on top of the capabilities. */
export interface PromptModel {
  /** Model id, for messages. */
  readonly id: string;
  readonly image: boolean;
}

/**
 * Validates every prompt block, then rebuilds the user message in wire order.
 *
 * Text and resource links are accepted (a link becomes a `[resource_link name="…" uri="…"]`
 * line), embedded text resources become context blocks, adjacent text is joined; images (when
 * advertised and the model accepts them) are validated and kept in wire order. Everything is
 * checked before anything is returned, so a bad block rejects the whole prompt.
 *
 * @example Admitting text and a link
 * ```ts
 * import assert from "node:assert/strict";
 * import { admitPrompt } from "./prompt_content.ts";
 * const parts = admitPrompt([
 *   { type: "text", text: "Read " },
 *   { type: "resource_link", name: "a.txt", uri: "file:///a.txt" },
 * ], { image: false, audio: false, embeddedContext: true });
 * assert(parts.length === 1);
 * ```
 *
 * @param blocks The prompt blocks
 * @param capabilities What is advertised
 * @param model The session's model, for images
 * @returns The user message parts
 * @throws {PromptContentError} Naming the first bad block
 */
export function admitPrompt(
  blocks: readonly ContentBlock[],
  capabilities: PromptCapabilities,
  model: PromptModel = { id: "", image: false },
): LlmContentPart[] {
  if (blocks.length === 0) {
    throw new PromptContentError("prompt: must contain at least one content block");
  }
  const images = blocks.filter((block) => block.type === "image").length;
  if (images > MAX_IMAGES_PER_PROMPT) {
    throw new PromptContentError(
      `prompt: has ${images} images; at most ${MAX_IMAGES_PER_PROMPT} are accepted per prompt`,
    );
  }
  const parts: LlmContentPart[] = [];
  let texts: string[] = [];
  const flush = (): void => {
    if (texts.length > 0) parts.push({ type: "text", text: texts.join("") });
    texts = [];
  };
  blocks.forEach((block, index) => {
    const where = `prompt[${index}]`;
    switch (block.type) {
      case "text":
        texts.push(block.text);
        return;
      case "resource_link":
        texts.push(
          `\n[resource_link name=${JSON.stringify(block.name)} uri=${JSON.stringify(block.uri)}]\n`,
        );
        return;
      case "resource": {
        if (!capabilities.embeddedContext) {
          throw new PromptContentError(
            `${where}: embedded resources are not supported (promptCapabilities.embeddedContext is false)`,
          );
        }
        const resource = block.resource;
        if (!("text" in resource)) {
          throw new PromptContentError(
            `${where}: embedded resource "${resource.uri}" has binary (blob) content; only text resources are supported`,
          );
        }
        texts.push(
          `\n[resource uri=${JSON.stringify(resource.uri)}]\n${resource.text}\n[/resource]\n`,
        );
        return;
      }
      case "image":
        if (!capabilities.image) {
          throw new PromptContentError(
            `${where}: image content is not supported (promptCapabilities.image is false)`,
          );
        }
        if (!model.image) {
          throw new PromptContentError(
            `${where}: the session's model "${model.id}" does not accept images`,
          );
        }
        {
          const image = admitImage(block, where);
          flush();
          parts.push(image);
        }
        return;
      case "audio":
        throw new PromptContentError(
          `${where}: audio content is not supported (promptCapabilities.audio is false)`,
        );
      default:
        throw new PromptContentError(
          `${where}: unknown content type ${JSON.stringify((block as { type: unknown }).type)}`,
        );
    }
  });
  flush();
  const meaningful = parts.some((part) => part.type === "image" || part.text.trim() !== "");
  if (!meaningful) {
    throw new PromptContentError("prompt: is empty; at least one block must carry text");
  }
  return parts.filter((part) => part.type === "image" || part.text !== "");
}
