/**
 * An OTLP/HTTP trace receiver on loopback for tests: it takes `POST /v1/traces` in OTLP/JSON
 * (`application/json`) and OTLP/protobuf (`application/x-protobuf`, decoded here by a small
 * protobuf reader of our own, so the server's encoder is checked by a second implementation),
 * answers 200 with an empty `ExportTraceServiceResponse`, and keeps every span with its resource.
 * Tests wait for spans with {@link OtlpReceiver.waitFor}, which settles on the export that
 * satisfies it, never on time.
 *
 * @module
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** An attribute value as the receiver keeps it. */
export type AttributeValue = string | number | boolean | null | AttributeValue[];

/** One span as received. */
export interface ReceivedSpan {
  readonly traceId: string;
  readonly spanId: string;
  /** `""` for a root span. */
  readonly parentSpanId: string;
  readonly name: string;
  /** OTLP's numbers: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  readonly kind: number;
  readonly attributes: Readonly<Record<string, AttributeValue>>;
  readonly events: ReadonlyArray<{ name: string; attributes: Record<string, AttributeValue> }>;
  /** OTLP's numbers: 0 unset, 1 ok, 2 error. */
  readonly statusCode: number;
  /** The resource's attributes (`service.name`, `service.instance.id`, …). */
  readonly resource: Readonly<Record<string, AttributeValue>>;
  /** The request's content type. */
  readonly contentType: string;
}

/** A running receiver. */
export interface OtlpReceiver extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`: what `OTEL_EXPORTER_OTLP_ENDPOINT` is set to. */
  readonly endpoint: string;
  /** Every span received so far. */
  readonly spans: readonly ReceivedSpan[];
  /** The requests received (any path), with their headers. */
  readonly requests: ReadonlyArray<{ path: string; headers: IncomingMessage["headers"] }>;
  /** Settles with the spans once `done(spans)` holds (checked after each export). */
  waitFor(done: (spans: readonly ReceivedSpan[]) => boolean): Promise<readonly ReceivedSpan[]>;
}

/** Reads protobuf wire format (the few types OTLP uses). */
class ProtoReader {
  readonly #bytes: Uint8Array;
  #at = 0;
  readonly #end: number;

  constructor(bytes: Uint8Array, start = 0, end = bytes.length) {
    this.#bytes = bytes;
    this.#at = start;
    this.#end = end;
  }

  get done(): boolean {
    return this.#at >= this.#end;
  }

  varint(): bigint {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = this.#bytes[this.#at++];
      if (byte === undefined) throw new Error("protobuf: varint past the end");
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  }

  /** The next field: its number, wire type, and a reader of its value. */
  field(): { number: number; wire: number; value: ProtoValue } {
    const key = Number(this.varint());
    const number = key >>> 3;
    const wire = key & 7;
    switch (wire) {
      case 0:
        return { number, wire, value: { varint: this.varint() } };
      case 1: {
        const view = new DataView(this.#bytes.buffer, this.#bytes.byteOffset + this.#at, 8);
        this.#at += 8;
        return { number, wire, value: { fixed64: view } };
      }
      case 2: {
        const length = Number(this.varint());
        const start = this.#at;
        this.#at += length;
        if (this.#at > this.#end) throw new Error("protobuf: field past the end");
        return { number, wire, value: { bytes: this.#bytes.subarray(start, start + length) } };
      }
      case 5:
        this.#at += 4;
        return { number, wire, value: {} };
      default:
        throw new Error(`protobuf: wire type ${wire} not read`);
    }
  }
}

interface ProtoValue {
  readonly varint?: bigint;
  readonly fixed64?: DataView;
  readonly bytes?: Uint8Array;
}

/** Each field of a message. */
function* fields(bytes: Uint8Array): Generator<{ number: number; value: ProtoValue }> {
  const reader = new ProtoReader(bytes);
  while (!reader.done) yield reader.field();
}

const hex = (bytes: Uint8Array | undefined): string =>
  bytes ? Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("") : "";
const utf8 = (bytes: Uint8Array | undefined): string =>
  bytes ? new TextDecoder().decode(bytes) : "";

/** An `AnyValue`. */
function protoAnyValue(bytes: Uint8Array): AttributeValue {
  for (const { number, value } of fields(bytes)) {
    switch (number) {
      case 1:
        return utf8(value.bytes);
      case 2:
        return value.varint !== 0n;
      case 3:
        return Number(BigInt.asIntN(64, value.varint ?? 0n));
      case 4:
        return value.fixed64?.getFloat64(0, true) ?? 0;
      case 5: {
        const items: AttributeValue[] = [];
        for (const item of fields(value.bytes ?? new Uint8Array())) {
          if (item.number === 1) items.push(protoAnyValue(item.value.bytes ?? new Uint8Array()));
        }
        return items;
      }
    }
  }
  return null;
}

/** A `KeyValue` into `into`. */
function protoKeyValue(bytes: Uint8Array, into: Record<string, AttributeValue>): void {
  let key = "";
  let attribute: AttributeValue = null;
  for (const { number, value } of fields(bytes)) {
    if (number === 1) key = utf8(value.bytes);
    if (number === 2) attribute = protoAnyValue(value.bytes ?? new Uint8Array());
  }
  into[key] = attribute;
}

/** The spans of an `ExportTraceServiceRequest` in protobuf. */
function decodeProtobuf(body: Uint8Array, contentType: string): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of fields(body)) {
    if (resourceSpans.number !== 1) continue;
    const resource: Record<string, AttributeValue> = {};
    const scopes: Uint8Array[] = [];
    for (const { number, value } of fields(resourceSpans.value.bytes ?? new Uint8Array())) {
      if (number === 1) {
        for (const attribute of fields(value.bytes ?? new Uint8Array())) {
          if (attribute.number === 1) protoKeyValue(attribute.value.bytes!, resource);
        }
      }
      if (number === 2) scopes.push(value.bytes ?? new Uint8Array());
    }
    for (const scope of scopes) {
      for (const { number, value } of fields(scope)) {
        if (number === 2) {
          spans.push(protoSpan(value.bytes ?? new Uint8Array(), resource, contentType));
        }
      }
    }
  }
  return spans;
}

/** One `Span` in protobuf. */
function protoSpan(
  bytes: Uint8Array,
  resource: Record<string, AttributeValue>,
  contentType: string,
): ReceivedSpan {
  let traceId = "", spanId = "", parentSpanId = "", name = "", kind = 0, statusCode = 0;
  const attributes: Record<string, AttributeValue> = {};
  const events: Array<{ name: string; attributes: Record<string, AttributeValue> }> = [];
  for (const { number, value } of fields(bytes)) {
    if (number === 1) traceId = hex(value.bytes);
    else if (number === 2) spanId = hex(value.bytes);
    else if (number === 4) parentSpanId = hex(value.bytes);
    else if (number === 5) name = utf8(value.bytes);
    else if (number === 6) kind = Number(value.varint);
    else if (number === 9) protoKeyValue(value.bytes!, attributes);
    else if (number === 11) {
      const event = { name: "", attributes: {} as Record<string, AttributeValue> };
      for (const field of fields(value.bytes!)) {
        if (field.number === 2) event.name = utf8(field.value.bytes);
        if (field.number === 3) protoKeyValue(field.value.bytes!, event.attributes);
      }
      events.push(event);
    } else if (number === 15) {
      for (const field of fields(value.bytes!)) {
        if (field.number === 3) statusCode = Number(field.value.varint);
      }
    }
  }
  return {
    traceId,
    spanId,
    parentSpanId,
    name,
    kind,
    attributes,
    events,
    statusCode,
    resource,
    contentType,
  };
}

/** An OTLP/JSON `AnyValue`. */
function jsonAnyValue(value: Record<string, unknown> | undefined): AttributeValue {
  if (!value) return null;
  if ("stringValue" in value) return String(value.stringValue);
  if ("boolValue" in value) return Boolean(value.boolValue);
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  if ("arrayValue" in value) {
    const values = (value.arrayValue as { values?: Record<string, unknown>[] }).values ?? [];
    return values.map(jsonAnyValue);
  }
  return null;
}

/** OTLP/JSON attributes. */
function jsonAttributes(list: unknown): Record<string, AttributeValue> {
  const into: Record<string, AttributeValue> = {};
  for (const entry of (list as Array<{ key: string; value: Record<string, unknown> }>) ?? []) {
    into[entry.key] = jsonAnyValue(entry.value);
  }
  return into;
}

/** The spans of an `ExportTraceServiceRequest` in OTLP/JSON. */
function decodeJson(body: Uint8Array, contentType: string): ReceivedSpan[] {
  // deno-lint-ignore no-explicit-any
  const request = JSON.parse(utf8(body)) as any;
  const spans: ReceivedSpan[] = [];
  for (const resourceSpans of request.resourceSpans ?? []) {
    const resource = jsonAttributes(resourceSpans.resource?.attributes);
    for (const scope of resourceSpans.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        spans.push({
          traceId: String(span.traceId ?? ""),
          spanId: String(span.spanId ?? ""),
          parentSpanId: String(span.parentSpanId ?? ""),
          name: String(span.name),
          kind: Number(span.kind ?? 0),
          attributes: jsonAttributes(span.attributes),
          events: (span.events ?? []).map((event: { name: string; attributes: unknown }) => ({
            name: event.name,
            attributes: jsonAttributes(event.attributes),
          })),
          statusCode: Number(span.status?.code ?? 0),
          resource,
          contentType,
        });
      }
    }
  }
  return spans;
}

/** Reads a request's body. */
async function bodyOf(request: IncomingMessage): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of request) chunks.push(chunk as Uint8Array);
  const bytes = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.length;
  }
  return bytes;
}

/**
 * Starts a receiver on 127.0.0.1 (a free port).
 *
 * @returns The receiver; dispose of it to stop it
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: Array<{ path: string; headers: IncomingMessage["headers"] }> = [];
  const waiters: Array<() => void> = [];
  const failures: unknown[] = [];
  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    requests.push({ path: request.url ?? "", headers: request.headers });
    const body = await bodyOf(request);
    const contentType = String(request.headers["content-type"] ?? "");
    if (request.method !== "POST" || request.url !== "/v1/traces") {
      response.writeHead(404).end();
      return;
    }
    try {
      spans.push(
        ...(contentType.startsWith("application/x-protobuf")
          ? decodeProtobuf(body, contentType)
          : decodeJson(body, contentType)),
      );
    } catch (error) {
      failures.push(error);
      response.writeHead(400).end();
      return;
    }
    response.writeHead(200, { "content-type": contentType }).end(
      contentType.startsWith("application/x-protobuf") ? new Uint8Array() : "{}",
    );
    for (const wake of waiters.splice(0)) wake();
  };
  const server = createServer((request, response) => void handle(request, response));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    requests,
    async waitFor(done) {
      for (;;) {
        if (failures.length > 0) throw failures[0];
        if (done(spans)) return spans;
        await new Promise<void>((resolve) => waiters.push(resolve));
      }
    },
    async [Symbol.asyncDispose]() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The span of `spans` named `name` (the first), or a failure naming what there is.
 *
 * @param spans The spans
 * @param name Its name
 * @param where Only spans for which this holds
 * @returns The span
 */
export function spanNamed(
  spans: readonly ReceivedSpan[],
  name: string,
  where: (span: ReceivedSpan) => boolean = () => true,
): ReceivedSpan {
  const found = spans.find((span) => span.name === name && where(span));
  if (!found) {
    throw new Error(`no span "${name}" among: ${spans.map((span) => span.name).join(", ")}`);
  }
  return found;
}
