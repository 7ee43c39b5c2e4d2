import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { Cassette } from "../../src/llm/cassette.ts";
import { cassetteFetch } from "../../src/llm/cassette_fetch.ts";
import { REQUEST_ORIGIN } from "../../src/llm/post_json.ts";
import { postJson } from "../../src/llm/post_json.ts";
import { ProviderError } from "../../src/llm/provider.ts";
import { NodeHost } from "../../src/host/node_host.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const host = new NodeHost();

/** A network that answers each request with the next of `answers`, counting the calls. */
function network(answers: Array<() => Response>): { fetch: typeof fetch; calls: Request[] } {
  const calls: Request[] = [];
  return {
    calls,
    fetch: ((input: RequestInfo | URL, init?: RequestInit) => {
      calls.push(new Request(input, init));
      const next = answers.shift();
      if (!next) return Promise.reject(new TypeError("fetch failed: no answer"));
      return Promise.resolve(next());
    }) as typeof fetch,
  };
}

function sse(...events: Array<{ event?: string; data: string }>): Response {
  const text = events.map(({ event, data }) =>
    `${event ? `event: ${event}\n` : ""}data: ${data}\n\n`
  )
    .join("");
  return new Response(text, {
    headers: { "content-type": "text/event-stream", "set-cookie": "s=1" },
  });
}

function init(body: unknown, roots: string[]): RequestInit {
  return {
    method: "POST",
    headers: {
      authorization: "Bearer sk-live-secret",
      "x-api-key": "sk-live-secret",
      "content-type": "application/json",
    },
    body: JSON.stringify(body),
    [REQUEST_ORIGIN]: { sessionId: "s1", roots },
  } as RequestInit;
}

Deno.test("cassetteFetch records what passes (no credential, paths as placeholders) and replays it elsewhere, in recorded order", async () => {
  await using dir = await tempDir("acp-harness-cassette-");
  const recordTo = await Cassette.open({ files: host, dir: dir.path, mode: "record" });
  const net = network([
    () => sse({ data: '{"n":1,"path":"/home/ada/p/a.txt"}' }, { event: "done", data: "[DONE]" }),
    () =>
      Response.json({ error: { message: "busy" } }, {
        status: 500,
        headers: { "retry-after": "1" },
      }),
    () => sse({ data: '{"n":2}' }),
  ]);
  const recording = cassetteFetch({ recordTo, fetch: net.fetch, secrets: ["sk-live-secret"] });
  const url = "http://127.0.0.1:1234/v1/chat/completions?key=sk-live-secret&api-version=2";
  const body = { messages: [{ role: "user", content: "read /home/ada/p/a.txt" }] };
  const texts: string[] = [];
  for (let index = 0; index < 3; index++) {
    texts.push(await (await recording(url, init(body, ["/home/ada/p"]))).text());
  }
  await recordTo.settled();
  assert.equal(net.calls.length, 3);
  const files = (await readdir(dir.path)).sort();
  assert.deepEqual(files, [
    "0001-post-v1-chat-completions.json",
    "0002-post-v1-chat-completions.json",
    "0003-post-v1-chat-completions.json",
    "index.json",
  ]);
  for (const file of files) {
    const text = await readFile(join(dir.path, file), "utf8");
    assert.ok(!text.includes("sk-live-secret"), file);
    assert.ok(!text.includes("/home/ada"), file);
    assert.ok(!/set-cookie|authorization|x-api-key/.test(text), file);
  }
  const first = JSON.parse(await readFile(join(dir.path, files[0] as string), "utf8"));
  assert.equal(first.request.path, "/v1/chat/completions?api-version=2");
  assert.deepEqual(first.request.headers, { "content-type": "application/json" });
  assert.deepEqual(first.response.events.map((event: { data: unknown }) => event.data), [
    { n: 1, path: "<root>/a.txt" },
    "[DONE]",
  ]);
  assert.equal(first.response.events[1].event, "done");

  // Replayed at another root, with another host and key: the same answers, in order.
  const replayFrom = await Cassette.open({ files: host, dir: dir.path, mode: "replay" });
  const replaying = cassetteFetch({ replayFrom });
  const other = { messages: [{ role: "user", content: "read /ci/q/a.txt" }] };
  const elsewhere = "http://10.9.9.9:1/v1/chat/completions?api-version=2";
  const replayed: Response[] = [];
  for (let index = 0; index < 3; index++) {
    replayed.push(await replaying(elsewhere, init(other, ["/ci/q"])));
  }
  assert.equal(
    await replayed[0]?.text(),
    texts[0]?.replace("/home/ada/p", "/ci/q").replace('data: {"n":1', 'data: {"n":1'),
  );
  assert.equal(replayed[1]?.status, 500);
  assert.equal(replayed[1]?.headers.get("retry-after"), "1");
  assert.equal(await replayed[2]?.text(), texts[2]);
  // A fourth asks more than was recorded: a miss, not retried.
  await assert.rejects(replaying(elsewhere, init(other, ["/ci/q"])), (error: unknown) => {
    assert.ok(error instanceof ProviderError);
    assert.equal(error.kind, "replay-miss");
    assert.equal(error.retryable, false);
    assert.match(error.message, /3 recorded answers were used already/);
    return true;
  });
});

Deno.test("a replay miss names the nearest recorded request and the first field that differs, through postJson", async () => {
  await using dir = await tempDir("acp-harness-cassette-");
  const recordTo = await Cassette.open({ files: host, dir: dir.path, mode: "record" });
  const recording = cassetteFetch({
    recordTo,
    fetch: network([() => Response.json({ ok: 1 }), () => Response.json({ ok: 2 })]).fetch,
  });
  const url = "http://h/v1/messages";
  await recording(
    url,
    init({ model: "m", messages: [{ content: "one" }, { content: "two" }] }, ["/w"]),
  );
  await recording(url, init({ model: "m", messages: [{ content: "uno" }] }, ["/w"]));
  await recordTo.settled();
  const replaying = cassetteFetch({
    replayFrom: await Cassette.open({ files: host, dir: dir.path, mode: "replay" }),
  });
  const posted = await postJson({
    url,
    body: { model: "m", messages: [{ content: "one" }, { content: "three" }] },
    fetch: replaying,
    signal: new AbortController().signal,
    origin: { sessionId: "s", roots: ["/x"] },
  });
  assert.equal(posted.type, "error");
  assert.ok(posted.type === "error");
  assert.equal(posted.error.kind, "replay-miss");
  assert.match(
    posted.error.message,
    /^Replay: no recorded response matches POST \/v1\/messages: the nearest recorded request, 0001-post-v1-messages\.json, differs first at messages\[1\]\.content$/,
  );
  const elsewhere = await postJson({
    url: "http://h/v1/other",
    body: {},
    fetch: replaying,
    signal: new AbortController().signal,
  });
  assert.ok(elsewhere.type === "error");
  assert.match(
    elsewhere.error.message,
    /the cassette has no request to \/v1\/other \(2 exchanges recorded\)/,
  );
});

Deno.test("replay and record together: what matches is answered, what misses is sent and appended", async () => {
  await using dir = await tempDir("acp-harness-cassette-");
  const first = await Cassette.open({ files: host, dir: dir.path, mode: "record" });
  await cassetteFetch({ recordTo: first, fetch: network([() => Response.json({ a: 1 })]).fetch })(
    "http://h/x",
    init({ q: 1 }, ["/w"]),
  );
  await first.settled();
  const both = await Cassette.open({ files: host, dir: dir.path, mode: "append" });
  const net = network([() => Response.json({ b: 2 })]);
  const mixed = cassetteFetch({ replayFrom: both, recordTo: both, fetch: net.fetch });
  assert.deepEqual(await (await mixed("http://h/x", init({ q: 1 }, ["/w"]))).json(), { a: 1 });
  assert.deepEqual(await (await mixed("http://h/x", init({ q: 2 }, ["/w"]))).json(), { b: 2 });
  await both.settled();
  assert.equal(net.calls.length, 1, "only the miss went out");
  const index = JSON.parse(await readFile(join(dir.path, "index.json"), "utf8"));
  assert.deepEqual(index.exchanges, ["0001-post-x.json", "0002-post-x.json"]);
  // A fresh recording starts the cassette over.
  const again = await Cassette.open({ files: host, dir: dir.path, mode: "record" });
  assert.equal(again.size, 0);
  assert.deepEqual(await readdir(dir.path), []);
});

Deno.test("a replayed stream keeps its recorded timing with --replay-speed recorded, and a client-cut one waits for the abort", async () => {
  await using dir = await tempDir("acp-harness-cassette-");
  // Each reading of the clock is 10 ms later: the request at 0, its events at 10 and 20.
  let clock = -10;
  const recordTo = await Cassette.open({ files: host, dir: dir.path, mode: "record" });
  const controller = new AbortController();
  const holding = new ReadableStream<Uint8Array>({
    start(stream) {
      stream.enqueue(new TextEncoder().encode("data: 1\n\n"));
      stream.enqueue(new TextEncoder().encode("data: 2\n\n"));
    },
  });
  const recording = cassetteFetch({
    recordTo,
    now: () => clock += 10,
    fetch: network([() =>
      new Response(holding, { headers: { "content-type": "text/event-stream" } })]).fetch,
  });
  const response = await recording("http://h/s", {
    ...init({}, ["/w"]),
    signal: controller.signal,
  });
  const reader = response.body?.getReader();
  await reader?.read();
  controller.abort();
  await reader?.cancel().catch(() => {});
  await recordTo.settled();
  const file = JSON.parse(await readFile(join(dir.path, "0001-post-s.json"), "utf8"));
  assert.equal(file.response.cut, "client");
  assert.deepEqual(file.response.events.map((event: { afterMs: number }) => event.afterMs), [
    10,
    20,
  ]);

  const replayFrom = await Cassette.open({ files: host, dir: dir.path, mode: "replay" });
  const abort = new AbortController();
  const replayed = await cassetteFetch({ replayFrom, speed: "recorded" })("http://h/s", {
    ...init({}, ["/w"]),
    signal: abort.signal,
  });
  const replayReader = replayed.body?.getReader() as ReadableStreamDefaultReader<Uint8Array>;
  const decoder = new TextDecoder();
  assert.equal(decoder.decode((await replayReader.read()).value), "data: 1\n\n");
  assert.equal(decoder.decode((await replayReader.read()).value), "data: 2\n\n");
  const pending = replayReader.read();
  abort.abort(new Error("cancelled by the test"));
  await assert.rejects(pending, /cancelled by the test/);
});
