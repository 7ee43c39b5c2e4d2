/**
 * A cassette: the provider HTTP exchanges of recorded runs, one pretty JSON file per exchange in
 * a directory with an `index.json` that lists them in order, overall and per session. Opened to
 * replay (each request answered by the first unused exchange whose request has the same
 * canonical form) and to record (each exchange written as it completes). Never holds a
 * credential: see {@link keptRequestHeaders} and {@link keptUrlPath}.
 *
 * @module
 */
import type { HostFiles } from "../host/host.ts";
import {
  canonicalBody,
  type CanonicalPaths,
  differenceCount,
  firstDifference,
} from "./canonical_request.ts";

/** One server-sent event of a recorded stream. */
export interface RecordedEvent {
  /** When it arrived, in ms after the request was sent. */
  readonly afterMs: number;
  /** The `event:` field, when it was not `message`. */
  readonly event?: string;
  /** The `data:` field: parsed when it is JSON (for a readable diff), else the text. */
  readonly data: unknown;
}

/** A recorded request: what matters of it, with paths replaced by placeholders. */
export interface RecordedRequest {
  readonly method: string;
  /** The URL's path and query, credentials dropped (the host differs between runs). */
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** The JSON body, when it was JSON. */
  readonly body?: unknown;
  /** The body as text, when it was not JSON. */
  readonly text?: string;
}

/** A recorded response: status, headers that matter, and the body as received. */
export interface RecordedResponse {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** An event stream's events, in order, with their timing. */
  readonly events?: readonly RecordedEvent[];
  /** A JSON body. */
  readonly body?: unknown;
  /** A body that was not JSON. */
  readonly text?: string;
  /** When the whole body had arrived, in ms after the request. */
  readonly afterMs?: number;
  /**
   * Set when the body did not end normally: `client` when the client stopped reading (a
   * cancelled turn), else the error that cut it.
   */
  readonly cut?: string;
}

/** One exchange file. */
export interface RecordedExchange {
  readonly request: RecordedRequest;
  /** The response, or the transport error when none came. */
  readonly response?: RecordedResponse;
  readonly error?: string;
}

/** An exchange with where it is, for matching. */
interface Entry {
  readonly file: string;
  readonly exchange: RecordedExchange;
  /** The canonical form of its request (method, path, body). */
  readonly key: string;
  readonly canonical: unknown;
  used: boolean;
}

/** The index of a cassette. */
interface CassetteIndex {
  readonly version: 1;
  readonly exchanges: readonly string[];
  readonly sessions: Readonly<Record<string, readonly string[]>>;
}

/** Why a request matched nothing: the nearest recorded request and where it differs. */
export interface CassetteMiss {
  readonly message: string;
}

const INDEX = "index.json";

/** Request headers worth keeping: what a provider's answer depends on; never a credential. */
const KEPT_REQUEST_HEADERS: ReadonlySet<string> = new Set([
  "accept",
  "content-type",
  "anthropic-version",
  "anthropic-beta",
  "openai-beta",
]);

/** Response headers worth keeping: what the client reads. */
const KEPT_RESPONSE_HEADER =
  /^(content-type|retry-after|retry-after-ms|x-should-retry|(x|anthropic)-ratelimit-[a-z-]+)$/i;

/** A header or query parameter named like a credential. */
const CREDENTIAL_NAME = /auth|key|token|secret|cookie|session|passw|credential|signature|bearer/i;

/**
 * The request headers a cassette keeps: the few a provider's answer depends on, never one named
 * like a credential (`authorization`, `x-api-key`, `api-key`, cookies).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keptRequestHeaders } from "./cassette.ts";
 * assert.deepEqual(
 *   keptRequestHeaders(new Headers({ authorization: "Bearer sk-1", "x-api-key": "k", "anthropic-version": "2023-06-01" })),
 *   { "anthropic-version": "2023-06-01" },
 * );
 * ```
 *
 * @param headers The request's headers
 * @returns Those kept, by lower-case name, in name order
 */
export function keptRequestHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of [...headers.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    if (KEPT_REQUEST_HEADERS.has(name) && !CREDENTIAL_NAME.test(name)) kept[name] = value;
  }
  return kept;
}

/**
 * The response headers a cassette keeps (content type, retry and rate-limit hints).
 *
 * @param headers The response's headers
 * @returns Those kept, by lower-case name, in name order
 */
export function keptResponseHeaders(headers: Headers): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const [name, value] of [...headers.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    if (name === "set-cookie") continue;
    if (KEPT_RESPONSE_HEADER.test(name)) kept[name] = value;
  }
  return kept;
}

/**
 * A URL's path and query as a cassette keeps it: query parameters named like a credential
 * (`key`, `api_key`, `access_token`) dropped, the rest in order.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { keptUrlPath } from "./cassette.ts";
 * assert.equal(keptUrlPath(new URL("http://h/v1/x?api-version=2&key=sk-1")), "/v1/x?api-version=2");
 * ```
 *
 * @param url The request's URL
 * @returns Its path and kept query
 */
export function keptUrlPath(url: URL): string {
  const query = new URLSearchParams();
  for (const [name, value] of url.searchParams) {
    if (!CREDENTIAL_NAME.test(name)) query.append(name, value);
  }
  const search = query.toString();
  return `${url.pathname}${search ? `?${search}` : ""}`;
}

/**
 * The name of the `number`th exchange file: readable in a diff (`0003-post-v1-chat-completions.json`).
 *
 * @param number Its place, from 1
 * @param method The request's method
 * @param path The request's path
 * @returns The file name
 */
export function exchangeFileName(number: number, method: string, path: string): string {
  const slug = path.split("?")[0]?.replace(/[^A-Za-z0-9]+/g, "-").replace(/^-+|-+$/g, "") ?? "";
  return `${String(number).padStart(4, "0")}-${method.toLowerCase()}${slug ? `-${slug}` : ""}.json`;
}

/** JSON with sorted keys, two-space indented, ending in a newline: a stable, readable file. */
function stableJson(value: unknown): string {
  const sort = (item: unknown): unknown => {
    if (Array.isArray(item)) return item.map(sort);
    if (item !== null && typeof item === "object") {
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(item).sort()) {
        const inner = (item as Record<string, unknown>)[key];
        if (inner !== undefined) out[key] = sort(inner);
      }
      return out;
    }
    return item;
  };
  return `${JSON.stringify(sort(value), null, 2)}\n`;
}

/** The canonical key of a request. */
function keyOf(method: string, path: string, canonical: unknown): string {
  return JSON.stringify([method.toUpperCase(), path, canonical]);
}

/** What {@link Cassette.open} needs. */
export interface CassetteOptions {
  readonly files: HostFiles;
  /** The cassette's directory. */
  readonly dir: string;
  /**
   * `replay`: read what is there (the directory must hold an index). `record`: start afresh
   * (the exchanges the old index lists are removed). `append`: read what is there and add to it
   * (recording what a replay missed).
   */
  readonly mode: "replay" | "record" | "append";
}

/**
 * The exchanges of a directory, to match requests against and to add to.
 *
 * @example Recording an exchange and matching it
 * ```ts ignore
 * const cassette = await Cassette.open({ files, dir, mode: "record" });
 * await cassette.add(exchange, "session-1");
 * ```
 */
export class Cassette {
  readonly #files: HostFiles;
  readonly #dir: string;
  readonly #entries: Entry[] = [];
  readonly #byKey = new Map<string, Entry[]>();
  readonly #order: string[] = [];
  readonly #sessions = new Map<string, string[]>();
  #writes: Promise<void> = Promise.resolve();
  #failure: unknown;

  private constructor(files: HostFiles, dir: string) {
    this.#files = files;
    this.#dir = dir;
  }

  /**
   * Opens a cassette directory.
   *
   * @param options The directory, the files and the mode
   * @returns The cassette
   * @throws {Error} When a replayed directory has no index or an unreadable exchange
   */
  static async open(options: CassetteOptions): Promise<Cassette> {
    const cassette = new Cassette(options.files, options.dir);
    const index = await cassette.#readIndex(options.mode === "replay");
    if (options.mode === "record") {
      await options.files.mkdir(options.dir);
      for (const file of index?.exchanges ?? []) {
        await options.files.remove(`${options.dir}/${file}`).catch(() => {});
      }
      await options.files.remove(`${options.dir}/${INDEX}`).catch(() => {});
      return cassette;
    }
    if (options.mode === "append") await options.files.mkdir(options.dir);
    for (const file of index?.exchanges ?? []) await cassette.#load(file);
    for (const [session, files] of Object.entries(index?.sessions ?? {})) {
      cassette.#sessions.set(session, [...files]);
    }
    return cassette;
  }

  /** How many exchanges it holds. */
  get size(): number {
    return this.#order.length;
  }

  /**
   * The first unused recorded exchange whose request has the canonical form of this one (it is
   * used up), or why there is none.
   *
   * @param method The request's method
   * @param path Its path and kept query
   * @param body Its JSON body (`undefined` for none), with the replay's paths
   * @param paths The replay's paths, replaced by placeholders for the match
   * @returns The exchange, or the miss
   */
  take(
    method: string,
    path: string,
    body: unknown,
    paths: CanonicalPaths,
  ): { readonly exchange: RecordedExchange } | { readonly miss: CassetteMiss } {
    const canonical = canonicalBody(body, paths);
    const candidates = this.#byKey.get(keyOf(method, path, canonical)) ?? [];
    const entry = candidates.find((candidate) => !candidate.used);
    if (entry) {
      entry.used = true;
      return { exchange: entry.exchange };
    }
    return { miss: { message: this.#missMessage(method, path, canonical, candidates.length) } };
  }

  /**
   * Adds an exchange: written to its own file, then the index (in order; a failed write is
   * reported by {@link settled}).
   *
   * @param exchange The exchange, paths already replaced
   * @param session The session it belongs to, when known
   * @returns Once written
   */
  add(exchange: RecordedExchange, session?: string): Promise<void> {
    const file = exchangeFileName(
      this.#order.length + 1,
      exchange.request.method,
      exchange.request.path,
    );
    this.#order.push(file);
    if (session !== undefined) {
      const files = this.#sessions.get(session) ?? [];
      files.push(file);
      this.#sessions.set(session, files);
    }
    const index: CassetteIndex = {
      version: 1,
      exchanges: [...this.#order],
      sessions: Object.fromEntries(this.#sessions),
    };
    const write = this.#writes.then(async () => {
      await this.#files.writeFileAtomic(`${this.#dir}/${file}`, stableJson(exchange));
      await this.#files.writeFileAtomic(`${this.#dir}/${INDEX}`, stableJson(index));
    });
    this.#writes = write.catch((error: unknown) => {
      this.#failure ??= error;
    });
    return write;
  }

  /**
   * Resolves once every exchange added so far is written.
   *
   * @throws The first write's failure
   */
  async settled(): Promise<void> {
    await this.#writes;
    if (this.#failure !== undefined) throw this.#failure;
  }

  async #readIndex(required: boolean): Promise<CassetteIndex | undefined> {
    let text: string;
    try {
      text = await this.#files.readTextFile(`${this.#dir}/${INDEX}`);
    } catch (error) {
      if (!required) return undefined;
      throw new Error(`no cassette in "${this.#dir}" (${INDEX}: ${(error as Error).message})`);
    }
    let index: unknown;
    try {
      index = JSON.parse(text);
    } catch (error) {
      throw new Error(`"${this.#dir}/${INDEX}" is not JSON: ${(error as Error).message}`);
    }
    const exchanges = (index as { exchanges?: unknown } | null)?.exchanges;
    if (
      !Array.isArray(exchanges) ||
      exchanges.some((file) => typeof file !== "string" || file.includes("/"))
    ) {
      throw new Error(`"${this.#dir}/${INDEX}": "exchanges" must list file names`);
    }
    const sessions = (index as { sessions?: unknown }).sessions;
    return {
      version: 1,
      exchanges: exchanges as string[],
      sessions: sessions !== null && typeof sessions === "object"
        ? sessions as Record<string, string[]>
        : {},
    };
  }

  async #load(file: string): Promise<void> {
    const path = `${this.#dir}/${file}`;
    let exchange: RecordedExchange;
    try {
      exchange = JSON.parse(await this.#files.readTextFile(path)) as RecordedExchange;
    } catch (error) {
      throw new Error(`cannot read the recorded exchange "${path}": ${(error as Error).message}`);
    }
    const request = exchange?.request;
    if (typeof request?.method !== "string" || typeof request.path !== "string") {
      throw new Error(`"${path}": "request" needs "method" and "path"`);
    }
    // The recorded body holds placeholders already: its canonical form needs no paths.
    const canonical = canonicalBody(request.body ?? request.text);
    const entry: Entry = {
      file,
      exchange,
      key: keyOf(request.method, request.path, canonical),
      canonical,
      used: false,
    };
    this.#entries.push(entry);
    this.#order.push(file);
    const same = this.#byKey.get(entry.key) ?? [];
    same.push(entry);
    this.#byKey.set(entry.key, same);
  }

  #missMessage(method: string, path: string, canonical: unknown, sameCount: number): string {
    const head = `no recorded response matches ${method.toUpperCase()} ${path}`;
    if (sameCount > 0) {
      return `${head}: its ${
        sameCount === 1 ? "one recorded answer was" : `${sameCount} recorded answers were`
      } used already (the run asks it more often than the recording did)`;
    }
    const sameRoute = this.#entries.filter((entry) =>
      entry.exchange.request.method.toUpperCase() === method.toUpperCase() &&
      entry.exchange.request.path === path
    );
    if (sameRoute.length === 0) {
      return `${head}: the cassette has no request to ${path} (${this.#entries.length} exchanges recorded)`;
    }
    let nearest = sameRoute[0] as Entry;
    let distance = Infinity;
    for (const entry of sameRoute) {
      const count = differenceCount(entry.canonical, canonical, distance);
      if (count < distance) {
        distance = count;
        nearest = entry;
      }
    }
    const field = firstDifference(nearest.canonical, canonical) ?? "(the body)";
    return `${head}: the nearest recorded request, ${nearest.file}${
      nearest.used ? " (used already)" : ""
    }, differs first at ${field}`;
  }
}
