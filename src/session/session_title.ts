/**
 * A session's title, taken from its first prompt.
 *
 * @module
 */
import type { LlmContentPart } from "../llm/provider.ts";
import type { SessionOutput } from "./outbox.ts";

/** The longest title, in UTF-16 code units (longer lines are cut with an ellipsis). */
const MAX_TITLE = 80;

/** Holds a session's title and announces it once: recorded and sent to the client. */
export class SessionTitle {
  readonly #output: SessionOutput;
  readonly #now: () => number;
  #title: string | undefined;

  /**
   * @param title The title so far (a restored session's)
   * @param output Where the title is recorded and sent
   * @param now The clock (for the update's time)
   */
  constructor(title: string | undefined, output: SessionOutput, now: () => number) {
    this.#title = title;
    this.#output = output;
    this.#now = now;
  }

  /** The title, once there is one. */
  get title(): string | undefined {
    return this.#title;
  }

  /**
   * Takes the title from the first non-blank line of a prompt's text, when there is none yet.
   *
   * @param content The prompt
   * @returns Whether the session got its title now
   */
  announce(content: readonly LlmContentPart[]): boolean {
    if (this.#title !== undefined) return false;
    const text = content.map((part) => part.type === "text" ? part.text : "").join(" ");
    const line = text.split("\n").map((part) => part.trim()).find((part) => part !== "") ?? "";
    if (line === "") return false;
    this.#title = line.length > MAX_TITLE ? `${line.slice(0, MAX_TITLE - 1)}…` : line;
    this.#output.record([{ type: "title", title: this.#title }], false, "later");
    this.#output.send({
      sessionUpdate: "session_info_update",
      title: this.#title,
      updatedAt: new Date(this.#now()).toISOString(),
    });
    return true;
  }
}
