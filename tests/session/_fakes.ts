/**
 * Fakes for the session units' tests: a store that records appends, a logger that keeps lines,
 * a gate, a model catalog with a provider that waits for the test.
 *
 * @module
 */
import type { ModelCatalog, ModelInfo } from "../../src/llm/catalog.ts";
import type { LlmEvent, LlmProvider } from "../../src/llm/provider.ts";
import { createLogger, type Logger } from "../../src/log/logger.ts";
import type { SessionUpdate } from "../../src/transport/acp_types.ts";
import type { SessionStore, StoredEvent } from "../../src/store/session_store.ts";

/** A promise the test opens. */
export interface Gate {
  readonly wait: Promise<void>;
  open(): void;
}

/** A gate. */
export function gate(): Gate {
  let open = (): void => {};
  const wait = new Promise<void>((resolve) => open = resolve);
  return { wait, open };
}

/** One `append` call. */
export interface AppendCall {
  readonly events: readonly StoredEvent[];
  readonly sync: boolean;
}

/** A store whose `append` is recorded; `behaviour` decides what each call does. */
export class FakeStore implements Pick<SessionStore, "append"> {
  readonly calls: AppendCall[] = [];
  /** What `append` returns (or throws); a resolved promise by default. */
  behaviour: (call: AppendCall) => Promise<void> = () => Promise.resolve();
  /** Called on every append, for tests that interleave appends with other outputs. */
  onAppend: (call: AppendCall) => void = () => {};

  /** Records the call. */
  append(_id: string, events: readonly StoredEvent[], options: { sync: boolean }): Promise<void> {
    const call = { events: [...events], sync: options.sync };
    this.calls.push(call);
    this.onAppend(call);
    return this.behaviour(call);
  }

  /** The event types of every call, one array per call. */
  types(): string[][] {
    return this.calls.map((call) => call.events.map((event) => event.type));
  }
}

/** A debug logger whose lines are kept. */
export function captureLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger("debug", (line) => lines.push(line.trimEnd())), lines };
}

/** A model's facts. */
export function modelInfo(overrides: Partial<ModelInfo> = {}): ModelInfo {
  return {
    id: "fake/model",
    provider: "fake",
    model: "model",
    name: "Fake model",
    description: "A fake",
    image: false,
    reasoningEfforts: [],
    ...overrides,
  };
}

/**
 * A provider whose each step waits for `next` to be opened (or for the abort), then answers
 * `text`. `started` settles when a step has begun.
 */
export class GatedProvider implements LlmProvider {
  readonly id = "fake";
  next: Gate = gate();
  started: Gate = gate();
  text = "answer";

  /** One step. */
  async *stream(_request: unknown, options: { signal: AbortSignal }): AsyncIterable<LlmEvent> {
    this.started.open();
    const { signal } = options;
    const aborted = new Promise<void>((resolve) => {
      if (signal.aborted) resolve();
      signal.addEventListener("abort", () => resolve(), { once: true });
    });
    await Promise.race([this.next.wait, aborted]);
    if (signal.aborted) {
      yield { type: "finish", reason: "aborted" };
      return;
    }
    yield { type: "text-delta", text: this.text };
    yield { type: "finish", reason: "stop" };
  }
}

/** A catalog of one model served by `provider`. */
export function fakeCatalog(provider: LlmProvider, info: ModelInfo = modelInfo()): ModelCatalog {
  return {
    info: (id: string) => id === info.id ? info : undefined,
    list: () => [info],
    resolve: () => ({ info, provider }),
  } as unknown as ModelCatalog;
}

/** A sink that keeps the updates and resolves at once. */
export function captureSink(): {
  sink: (update: SessionUpdate) => Promise<void>;
  updates: SessionUpdate[];
} {
  const updates: SessionUpdate[] = [];
  return {
    updates,
    sink: (update) => {
      updates.push(update);
      return Promise.resolve();
    },
  };
}
