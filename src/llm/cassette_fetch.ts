/**
 * The fetch every provider uses when a run records or replays (`--record`, `--replay`): a wrapper
 * at the HTTP layer, the same for every provider. Recording passes each request on and writes the
 * exchange to the cassette as it completes (credentials never stored, paths replaced by
 * placeholders); replaying answers from the cassette and never touches the network, and a request
 * that matches nothing fails loudly with a `replay-miss` provider error naming the nearest
 * recorded request and the first field where it differs.
 *
 * @module
 */
import type {
  Cassette,
  RecordedEvent,
  RecordedExchange,
  RecordedRequest,
  RecordedResponse,
} from "./cassette.ts";
import { keptRequestHeaders, keptResponseHeaders, keptUrlPath } from "./cassette.ts";
import { type CanonicalPaths, mapStrings, placePaths, restorePaths } from "./canonical_request.ts";
import { originOf } from "./post_json.ts";
import { ProviderError } from "./provider.ts";
import { SseDecoder } from "./sse.ts";
import { abortableDelay } from "../util/abortable_delay.ts";

/** What {@link cassetteFetch} is built from. */
export interface CassetteFetchOptions {
  /** Answers requests; one that matches nothing fails, unless `recordTo` is set. */
  readonly replayFrom?: Cassette;
  /** Records what goes to the network: every request, or what `replayFrom` misses. */
  readonly recordTo?: Cassette;
  /** The network's fetch (when recording). @default globalThis.fetch */
  readonly fetch?: typeof fetch;
  /** `recorded`: replayed events keep their recorded timing; `instant` (default): at once. */
  readonly speed?: "recorded" | "instant";
  /** The data directory and home, replaced by placeholders like the session's roots. */
  readonly paths?: Omit<CanonicalPaths, "roots">;
  /** Values (API keys) replaced by `[redacted]` wherever they would be stored. */
  readonly secrets?: readonly string[];
  /** The clock, in ms. @default {performance.now} */
  readonly now?: () => number;
}

/**
 * A fetch that records to or replays from a cassette.
 *
 * @example Replaying a recorded answer
 * ```ts ignore
 * const replaying = cassetteFetch({ replayFrom: cassette });
 * const response = await replaying("http://any-host/v1/chat/completions", init);
 * ```
 *
 * @param options The cassettes to replay from and record to, and the network's fetch
 * @returns The fetch to give the providers
 */
export function cassetteFetch(options: CassetteFetchOptions): typeof fetch {
  const network = options.fetch ?? fetch;
  const now = options.now ?? (() => performance.now());
  /** The roots each session's requests last carried (a compaction request carries none). */
  const rootsOf = new Map<string, readonly string[]>();
  const wrapped = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET"))
      .toUpperCase();
    const origin = originOf(init);
    if (origin?.roots) rootsOf.set(origin.sessionId, origin.roots);
    const roots = origin ? rootsOf.get(origin.sessionId) : undefined;
    const paths: CanonicalPaths = { ...options.paths, ...(roots ? { roots } : {}) };
    const bodyText = typeof init?.body === "string" ? init.body : undefined;
    const body = bodyText === undefined ? undefined : parsedOrText(bodyText);
    const path = keptUrlPath(url);
    const { replayFrom, recordTo } = options;
    if (replayFrom) {
      const found = replayFrom.take(method, path, body, paths);
      if ("exchange" in found) return replay(found.exchange, paths, init?.signal, options.speed);
      if (!recordTo) {
        throw new ProviderError(`Replay: ${found.miss.message}`, {
          kind: "replay-miss",
          retryable: false,
        });
      }
    }
    if (!recordTo) return await network(input, init);
    const request: RecordedRequest = {
      method,
      path,
      headers: keptRequestHeaders(new Headers(init?.headers)),
      ...(body === undefined ? {} : typeof body === "string" ? { text: body } : { body }),
    };
    const store = (exchange: RecordedExchange): void => {
      const scrubbed = redact(placePaths(exchange, paths), options.secrets ?? []);
      void recordTo.add(scrubbed as RecordedExchange, origin?.sessionId).catch(() => {});
    };
    const started = now();
    let response: Response;
    try {
      response = await network(input, init);
    } catch (error) {
      if (!init?.signal?.aborted) store({ request, error: String(error) });
      throw error;
    }
    return recordResponse(response, request, started, now, init?.signal, store);
  };
  return wrapped as typeof fetch;
}

/** Reads the response as it passes to the provider, and stores the exchange once it ends. */
async function recordResponse(
  response: Response,
  request: RecordedRequest,
  started: number,
  now: () => number,
  signal: AbortSignal | null | undefined,
  store: (exchange: RecordedExchange) => void,
): Promise<Response> {
  const head = { status: response.status, headers: keptResponseHeaders(response.headers) };
  const eventStream = /text\/event-stream/i.test(response.headers.get("content-type") ?? "");
  if (!eventStream || !response.body) {
    const text = await response.text();
    store({
      request,
      response: { ...head, ...bodyField(text), afterMs: Math.round(now() - started) },
    });
    return new Response(text, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }
  const [provider, recorder] = response.body.tee();
  void (async () => {
    const events: RecordedEvent[] = [];
    const decoder = new SseDecoder();
    const text = new TextDecoder();
    let cut: string | undefined;
    const reader = recorder.getReader();
    // The client's abort ends the recording too, even with a body that ignores it.
    const stop = (): void => void reader.cancel(signal?.reason).catch(() => {});
    signal?.addEventListener("abort", stop, { once: true });
    const onData = (data: string, event: string): void => {
      events.push({
        afterMs: Math.round(now() - started),
        ...(event === "message" ? {} : { event }),
        data: parsedOrText(data),
      });
    };
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        decoder.feed(text.decode(value, { stream: true }), onData);
      }
      decoder.feed(text.decode(), onData);
    } catch (error) {
      cut = signal?.aborted ? "client" : String(error);
    } finally {
      signal?.removeEventListener("abort", stop);
    }
    if (signal?.aborted) cut = "client";
    const recorded: RecordedResponse = {
      ...head,
      events,
      afterMs: Math.round(now() - started),
      ...(cut === undefined ? {} : { cut }),
    };
    store({ request, response: recorded });
  })();
  return new Response(provider, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}

/** The response a recorded exchange gives, its paths those of this run. */
function replay(
  exchange: RecordedExchange,
  paths: CanonicalPaths,
  signal: AbortSignal | null | undefined,
  speed: "recorded" | "instant" = "instant",
): Response {
  const restored = restorePaths(exchange, paths) as RecordedExchange;
  const recorded = restored.response;
  if (!recorded) throw new TypeError(`fetch failed (recorded): ${restored.error ?? "no response"}`);
  const { status } = recorded;
  if (!Number.isInteger(status) || status < 200 || status > 599) {
    throw new TypeError(
      `fetch failed (recorded): the recorded status ${JSON.stringify(status)} is not one`,
    );
  }
  const headers = new Headers(isStringRecord(recorded.headers) ? recorded.headers : {});
  if (!recorded.events) {
    const text = recorded.text ??
      (recorded.body === undefined ? "" : JSON.stringify(recorded.body));
    return new Response(String(text), { status, headers });
  }
  const events: readonly RecordedEvent[] = Array.isArray(recorded.events) ? recorded.events : [];
  const encoder = new TextEncoder();
  const abort = signal ?? new AbortController().signal;
  const body = new ReadableStream<Uint8Array>({
    async start(controller) {
      let at = 0;
      try {
        for (const event of events) {
          if (speed === "recorded" && Number.isFinite(event.afterMs) && event.afterMs > at) {
            if (!await abortableDelay(event.afterMs - at, abort)) throw abort.reason;
            at = event.afterMs;
          }
          const data = typeof event.data === "string" ? event.data : JSON.stringify(event.data);
          const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}`).join("\n");
          // A name from the file cannot add lines of its own to the stream.
          const name = typeof event.event === "string" ? event.event.replace(/[\r\n]/g, "") : "";
          controller.enqueue(encoder.encode(`${name ? `event: ${name}\n` : ""}${lines}\n\n`));
        }
      } catch (error) {
        // A stream the reader cancelled takes no error either.
        try {
          controller.error(error);
        } catch {
          // Closed already.
        }
        return;
      }
      if (recorded.cut === undefined) {
        controller.close();
      } else if (recorded.cut === "client") {
        // The recorded client stopped reading here: so does the stream, until this one does.
        abort.addEventListener("abort", () => controller.error(abort.reason), { once: true });
      } else {
        controller.error(new TypeError(`recorded stream cut: ${recorded.cut}`));
      }
    },
  });
  return new Response(body, { status, headers });
}

/** Whether a value read from a file is an object of strings (headers). */
function isStringRecord(value: unknown): value is Record<string, string> {
  return value !== null && typeof value === "object" && !Array.isArray(value) &&
    Object.values(value).every((item) => typeof item === "string");
}

/** A body as a cassette keeps it: `body` when JSON, else `text`. */
function bodyField(text: string): { body: unknown } | { text: string } {
  const parsed = parsedOrText(text);
  return typeof parsed === "string" ? { text } : { body: parsed };
}

/** The JSON value of a text, or the text when it is not JSON (or is a bare JSON string). */
function parsedOrText(text: string): unknown {
  if (text === "" || !/^[\s]*[[{]/.test(text)) return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** A copy with every secret value replaced by `[redacted]`. */
function redact(value: unknown, secrets: readonly string[]): unknown {
  const real = secrets.filter((secret) => secret.length >= 4);
  if (real.length === 0) return value;
  return mapStrings(value, (text) => {
    let out = text;
    for (const secret of real) out = out.replaceAll(secret, "[redacted]");
    return out;
  });
}
