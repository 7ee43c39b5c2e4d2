/**
 * What the client sees of a delegated agent's work inside the `delegate` call: its answer text
 * and its tool calls, as one accumulated view sent at most once per event-loop task.
 *
 * @module
 */
import type { SessionUpdate } from "../protocol/agent_client.ts";
import type { ToolDisplay } from "../tools/tool.ts";

/** The most characters of the agent's output the live view shows (its latest part). */
export const MAX_VIEW_CHARS = 64 * 1024;

/** The most characters of the agent's final text handed to the model. */
export const MAX_FINAL_TEXT_CHARS = 100_000;

type Entry =
  | { readonly type: "text"; text: string }
  | { readonly type: "tool"; readonly id: string; title: string; status: string };

/**
 * Accumulates a delegated agent's updates and publishes the view: its message text (thoughts,
 * plans and the rest are left out) and one line per tool call with its latest title and status.
 * Publishing is coalesced: however many updates arrive in one event-loop task, the view is sent
 * once, after it (an ACP tool call's content replaces the previous one, so each send carries the
 * whole view, cut to its last {@link MAX_VIEW_CHARS}).
 *
 * @example Two chunks, one publication
 * ```ts
 * import assert from "node:assert/strict";
 * import { DelegationView } from "./delegation_view.ts";
 * const sent: unknown[] = [];
 * const view = new DelegationView((display) => sent.push(display));
 * view.apply({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Hel" } });
 * view.apply({ sessionUpdate: "agent_message_chunk", content: { type: "text", text: "lo" } });
 * await new Promise((resolve) => setTimeout(resolve, 5));
 * assert.deepEqual(sent, [[{ type: "text", text: "Hello" }]]);
 * assert.equal(view.finalText(), "Hello");
 * view.close();
 * ```
 */
export class DelegationView {
  readonly #publish: (display: readonly ToolDisplay[]) => void;
  readonly #entries: Entry[] = [];
  readonly #tools = new Map<string, Extract<Entry, { type: "tool" }>>();
  /** The message text since the last tool call: the agent's final answer so far. */
  #tail = "";
  #timer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** @param publish Sends the view (the call's `in_progress` update) */
  constructor(publish: (display: readonly ToolDisplay[]) => void) {
    this.#publish = publish;
  }

  /**
   * Takes one of the agent's updates into the view and schedules a publication.
   *
   * @param update The `session/update` payload
   */
  apply(update: SessionUpdate): void {
    if (this.#closed) return;
    switch (update.sessionUpdate) {
      case "agent_message_chunk": {
        if (update.content.type !== "text" || update.content.text === "") return;
        const text = update.content.text;
        const last = this.#entries.at(-1);
        if (last?.type === "text") last.text += text;
        else this.#entries.push({ type: "text", text });
        this.#tail += text;
        break;
      }
      case "tool_call": {
        const entry = {
          type: "tool" as const,
          id: update.toolCallId,
          title: update.title,
          status: update.status ?? "pending",
        };
        this.#tools.set(entry.id, entry);
        this.#entries.push(entry);
        this.#tail = "";
        break;
      }
      case "tool_call_update": {
        const entry = this.#tools.get(update.toolCallId);
        if (!entry) return;
        if (typeof update.title === "string") entry.title = update.title;
        if (typeof update.status === "string") entry.status = update.status;
        break;
      }
      default:
        return;
    }
    this.#timer ??= setTimeout(() => {
      this.#timer = undefined;
      if (!this.#closed) this.#publish(this.display());
    }, 0);
  }

  /**
   * The agent's final answer: its message text after its last tool call (all of its text when
   * that is empty), cut to {@link MAX_FINAL_TEXT_CHARS}.
   */
  finalText(): string {
    const text = this.#tail.trim() === "" ? this.#allText() : this.#tail;
    return text.length > MAX_FINAL_TEXT_CHARS
      ? `${text.slice(0, MAX_FINAL_TEXT_CHARS)}\n… (cut at ${MAX_FINAL_TEXT_CHARS} characters)`
      : text;
  }

  /** The view: text blocks and tool call lines, in order, cut to the last {@link MAX_VIEW_CHARS}. */
  display(): ToolDisplay[] {
    const display: ToolDisplay[] = [];
    let budget = MAX_VIEW_CHARS;
    for (let index = this.#entries.length - 1; index >= 0 && budget > 0; index--) {
      const entry = this.#entries[index] as Entry;
      let text = entry.type === "text" ? entry.text : `[tool] ${entry.title} (${entry.status})`;
      if (text.length > budget) text = `…${text.slice(text.length - budget)}`;
      budget -= text.length;
      display.push({ type: "text", text });
    }
    return display.reverse();
  }

  /** Publishes now what is scheduled for publication, if anything. */
  flush(): void {
    if (this.#timer === undefined || this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#publish(this.display());
  }

  /** Stops publishing (a scheduled publication is dropped). */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #allText(): string {
    return this.#entries.map((entry) => entry.type === "text" ? entry.text : "").join("");
  }
}
