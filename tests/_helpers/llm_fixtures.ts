/**
 * Builders for scripted OpenAI-compatible and Anthropic streams served by the fake LLM server.
 *
 * @module
 */
import { sse, type SseItem, type SseResponse } from "./fake_llm_server.ts";

/** An OpenAI chat chunk carrying one delta. */
function chunk(delta: Record<string, unknown>, finish: string | null = null): SseItem {
  return {
    data: {
      id: "chatcmpl-1",
      object: "chat.completion.chunk",
      created: 1,
      model: "m",
      choices: [{ index: 0, delta, finish_reason: finish }],
    },
  };
}

/** Options for {@link openAiTurn}. */
export interface OpenAiTurn {
  readonly text?: readonly string[];
  readonly reasoning?: readonly string[];
  readonly toolCalls?: ReadonlyArray<{ id: string; name: string; arguments: unknown }>;
  /** Usage; `cached` and `reasoning` go in `prompt_tokens_details` / `completion_tokens_details`. */
  readonly usage?: { prompt: number; completion: number; cached?: number; reasoning?: number };
  readonly chunkDelayMs?: number;
  /** Keep the response open after the items (for cancellation tests). */
  readonly hold?: boolean;
}

/** One streamed OpenAI-compatible answer. */
export function openAiTurn(turn: OpenAiTurn): SseResponse {
  const items: SseItem[] = [chunk({ role: "assistant", content: "" })];
  for (const text of turn.reasoning ?? []) items.push(chunk({ reasoning_content: text }));
  for (const text of turn.text ?? []) items.push(chunk({ content: text }));
  (turn.toolCalls ?? []).forEach((call, index) => {
    const args = typeof call.arguments === "string"
      ? call.arguments
      : JSON.stringify(call.arguments);
    const half = Math.floor(args.length / 2);
    items.push(chunk({
      tool_calls: [{
        index,
        id: call.id,
        type: "function",
        function: { name: call.name, arguments: args.slice(0, half) },
      }],
    }));
    items.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
  });
  if (!turn.hold) {
    items.push(chunk({}, turn.toolCalls?.length ? "tool_calls" : "stop"));
    items.push({
      data: {
        id: "chatcmpl-1",
        object: "chat.completion.chunk",
        choices: [],
        usage: {
          prompt_tokens: turn.usage?.prompt ?? 100,
          completion_tokens: turn.usage?.completion ?? 10,
          total_tokens: (turn.usage?.prompt ?? 100) + (turn.usage?.completion ?? 10),
          ...(turn.usage?.cached === undefined
            ? {}
            : { prompt_tokens_details: { cached_tokens: turn.usage.cached } }),
          ...(turn.usage?.reasoning === undefined
            ? {}
            : { completion_tokens_details: { reasoning_tokens: turn.usage.reasoning } }),
        },
      },
    });
    items.push({ data: "[DONE]" });
  }
  return sse(items, {
    ...(turn.chunkDelayMs === undefined ? {} : { chunkDelayMs: turn.chunkDelayMs }),
    ...(turn.hold ? { end: "hold" } : {}),
  });
}

/** Options for {@link anthropicTurn}. */
export interface AnthropicTurn {
  readonly thinking?: { text: string; signature: string };
  readonly text?: string;
  readonly toolUse?: { id: string; name: string; input: unknown };
}

/** One streamed Anthropic Messages answer. */
export function anthropicTurn(turn: AnthropicTurn): SseResponse {
  const items: SseItem[] = [{
    event: "message_start",
    data: {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        content: [],
        usage: { input_tokens: 50, output_tokens: 1, cache_read_input_tokens: 20 },
      },
    },
  }];
  let index = 0;
  const block = (start: unknown, deltas: unknown[]): void => {
    items.push({
      event: "content_block_start",
      data: { type: "content_block_start", index, content_block: start },
    });
    for (const delta of deltas) {
      items.push({
        event: "content_block_delta",
        data: { type: "content_block_delta", index, delta },
      });
    }
    items.push({ event: "content_block_stop", data: { type: "content_block_stop", index } });
    index++;
  };
  if (turn.thinking) {
    block({ type: "thinking", thinking: "" }, [
      { type: "thinking_delta", thinking: turn.thinking.text },
      { type: "signature_delta", signature: turn.thinking.signature },
    ]);
  }
  if (turn.text) block({ type: "text", text: "" }, [{ type: "text_delta", text: turn.text }]);
  if (turn.toolUse) {
    block({ type: "tool_use", id: turn.toolUse.id, name: turn.toolUse.name, input: {} }, [
      { type: "input_json_delta", partial_json: JSON.stringify(turn.toolUse.input) },
    ]);
  }
  items.push({ event: "ping", data: { type: "ping" } });
  items.push({
    event: "message_delta",
    data: {
      type: "message_delta",
      delta: { stop_reason: turn.toolUse ? "tool_use" : "end_turn", stop_sequence: null },
      usage: { output_tokens: 30 },
    },
  });
  items.push({ event: "message_stop", data: { type: "message_stop" } });
  return sse(items);
}
