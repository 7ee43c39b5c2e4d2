import type { Logger } from "../log/logger.ts";
import type { SessionUpdate } from "../transport/acp_types.ts";

/** Delivers one update to the client; resolves once it is written. */
export type UpdateSink = (update: SessionUpdate) => Promise<void>;

const HIGH_WATER = 256;

/**
 * One session's ordered outbound updates.
 *
 * Updates are handed to the sink in the order pushed, at once; the sink (the connection's single
 * write queue) keeps that order on the wire, so anything sent after a push (such as the prompt's
 * answer) goes out after the update.
 * `push` returns a promise only when too many writes are outstanding, which lets a fast producer
 * wait for a slow client; `flush` resolves once everything pushed so far is written.
 */
export class UpdateQueue {
  readonly #sink: UpdateSink;
  readonly #logger: Logger;
  #last: Promise<void> = Promise.resolve();
  #outstanding = 0;

  /**
   * @param sink Writes one update
   * @param logger Told about failed writes
   */
  constructor(sink: UpdateSink, logger: Logger) {
    this.#sink = sink;
    this.#logger = logger;
  }

  /**
   * Sends an update after every earlier one.
   *
   * @param update The update
   * @returns A promise to await before pushing more, when the client is behind
   */
  push(update: SessionUpdate): Promise<void> | undefined {
    this.#outstanding++;
    this.#last = this.#sink(update).then(
      () => {
        this.#outstanding--;
      },
      (error: unknown) => {
        this.#outstanding--;
        this.#logger.debug("session update not delivered", { error: String(error) });
      },
    );
    return this.backlog();
  }

  /**
   * The promise to await before pushing more when too many writes are outstanding (as
   * {@link push} returns it), else `undefined`.
   */
  backlog(): Promise<void> | undefined {
    return this.#outstanding >= HIGH_WATER ? this.#last : undefined;
  }

  /** Resolves once every update pushed so far is written (or failed). */
  flush(): Promise<void> {
    return this.#last;
  }
}
