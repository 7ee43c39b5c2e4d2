/**
 * Hostile cassettes: a `--replay` directory is workspace input (a committed fixture anyone may
 * edit), so `acp-harness run --replay` is fed a real recording (made here against the fake
 * OpenAI server) and then broken copies of it: an index that is not JSON, names that climb out of
 * the directory, missing and garbled exchange files, statuses and headers that are not ones, an
 * event stream that injects lines, a megabyte event, answers a provider cannot parse, a recorded
 * transport failure, a stream the recorded client cut. Each run must exit with a documented code
 * (2 for a cassette that cannot be read, 1 for a turn that fails, 0 or 4 where the answer still
 * works or the time limit ends it), print its one valid document when the turn ran, send nothing
 * to the network, and never crash or hang.
 *
 * @module
 */
import { cp, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { startFakeLlmServer } from "../../tests/_helpers/fake_llm_server.ts";
import { openAiTurn } from "../../tests/_helpers/llm_fixtures.ts";
import type { Scenario, ScenarioContext } from "../context.ts";
import { type Ran, runOnce } from "./run.ts";

type Exchange = { request: Record<string, unknown>; response?: Record<string, unknown> };

/** One broken copy: what it does to the cassette and the exit codes allowed. */
interface Variant {
  readonly name: string;
  readonly codes: readonly number[];
  /** Extra flags of the replaying run. */
  readonly flags?: readonly string[];
  break(dir: string, first: string): Promise<void>;
}

async function editExchange(dir: string, file: string, edit: (exchange: Exchange) => void) {
  const path = join(dir, file);
  const exchange = JSON.parse(await readFile(path, "utf8")) as Exchange;
  edit(exchange);
  await writeFile(path, JSON.stringify(exchange));
}

const VARIANTS: readonly Variant[] = [
  { name: "intact", codes: [0], break: async () => {} },
  { name: "index not JSON", codes: [2], break: (dir) => writeFile(join(dir, "index.json"), "{") },
  {
    name: "index climbs out",
    codes: [2],
    break: (dir) =>
      writeFile(join(dir, "index.json"), JSON.stringify({ exchanges: ["../../etc/passwd"] })),
  },
  {
    name: "index names a missing file",
    codes: [2],
    break: (dir) =>
      writeFile(join(dir, "index.json"), JSON.stringify({ exchanges: ["nope.json"] })),
  },
  {
    name: "index lists nothing",
    codes: [1],
    break: (dir) => writeFile(join(dir, "index.json"), JSON.stringify({ exchanges: [] })),
  },
  {
    name: "exchange not JSON",
    codes: [2],
    break: (dir, first) => writeFile(join(dir, first), "["),
  },
  {
    name: "exchange without a request",
    codes: [2],
    break: (dir, first) => writeFile(join(dir, first), JSON.stringify({ response: {} })),
  },
  {
    name: "status not one",
    codes: [1],
    break: (dir, first) =>
      editExchange(dir, first, (exchange) => {
        if (exchange.response) exchange.response.status = "teapot";
      }),
  },
  {
    name: "headers not strings",
    codes: [0, 1],
    break: (dir, first) =>
      editExchange(dir, first, (exchange) => {
        if (exchange.response) exchange.response.headers = { "content-type": 7, x: null };
      }),
  },
  {
    name: "event names inject lines",
    codes: [0, 1],
    break: (dir, first) =>
      editExchange(dir, first, (exchange) => {
        const events = exchange.response?.events as Array<Record<string, unknown>> | undefined;
        for (const event of events ?? []) {
          event.event = 'message\ndata: {"injected":true}\n\n';
          if (typeof event.data === "string") event.data += "\rdata: injected";
        }
      }),
  },
  {
    name: "a megabyte event",
    codes: [0, 1],
    break: (dir, first) =>
      editExchange(dir, first, (exchange) => {
        const events = exchange.response?.events as unknown[] | undefined;
        events?.unshift({ afterMs: 0, data: "x".repeat(1 << 20) });
      }),
  },
  {
    name: "answers the provider cannot parse",
    codes: [1],
    break: (dir, first) =>
      editExchange(dir, first, (exchange) => {
        if (exchange.response) {
          exchange.response.events = [{ afterMs: 0, data: { choices: "nope" } }, {
            afterMs: 1,
            data: "{not json",
          }];
        }
      }),
  },
  {
    name: "a recorded transport failure",
    codes: [1],
    break: (dir, first) =>
      editExchange(dir, first, (exchange) => {
        delete exchange.response;
        (exchange as Record<string, unknown>).error = "TypeError: fetch failed";
      }),
  },
  {
    name: "a stream the recorded client cut",
    codes: [4],
    flags: ["--turn-timeout", "2"],
    break: (dir, first) =>
      editExchange(dir, first, (exchange) => {
        if (!exchange.response) return;
        // Cut before the stream's end: the replay waits for the client, as the provider did.
        exchange.response.events = (exchange.response.events as unknown[]).slice(0, 1);
        exchange.response.cut = "client";
      }),
  },
];

/** Whether a run's output is a crash: a signal, an exit code no one documented, a stack trace. */
function crashOf(ran: Ran): string | undefined {
  if (ran.signal) return `killed by ${ran.signal}`;
  if (![0, 1, 2, 3, 4].includes(ran.code ?? -1)) return `exit ${ran.code}`;
  if (/\n\s+at .+:\d+:\d+/.test(ran.stderr)) return "a stack trace on stderr";
  return undefined;
}

/** See the module doc. */
export const cassettes: Scenario = {
  name: "cassettes",
  description:
    `run --replay fed ${VARIANTS.length} broken cassettes: documented exits, no crash, no hang, no network`,
  async run(context: ScenarioContext): Promise<void> {
    const cwd = join(context.base, "project");
    await mkdir(cwd, { recursive: true });
    await writeFile(join(cwd, "a.txt"), "alpha\n");
    await using fake = await startFakeLlmServer();
    const config = join(context.base, "config.json");
    await writeFile(
      config,
      JSON.stringify({
        providers: {
          fake: { api: "openai-chat", baseUrl: `${fake.url}/v1`, apiKeyEnv: "FAKE_KEY" },
        },
        models: { "fake/coder": { contextWindow: 32_000 } },
      }),
    );
    const common = [
      "--ephemeral",
      "--json",
      "--config",
      config,
      "--model",
      "fake/coder",
      "--mode",
      "auto",
    ];
    const recorded = join(context.base, "recorded");
    fake.enqueue(
      openAiTurn({ toolCalls: [{ id: "c1", name: "read_file", arguments: { path: "a.txt" } }] }),
      openAiTurn({ text: ["It says alpha."] }),
    );
    const marker = context.newMarker();
    const recording = await runOnce(
      context,
      cwd,
      marker,
      [
        ...common,
        "--record",
        recorded,
        "What does a.txt say?",
      ],
      undefined,
      { FAKE_KEY: "sk-torture" },
    );
    if (recording.code !== 0) {
      context.fail("other", "recording", `exit ${recording.code}: ${recording.stderr.slice(-300)}`);
      return;
    }
    const sent = fake.requests.length;
    const rounds = context.pick(3, 2, 1);
    for (let round = 0; round < rounds; round++) {
      for (const [index, variant] of VARIANTS.entries()) {
        const dir = join(context.base, `cassette-${round}-${index}`);
        await cp(recorded, dir, { recursive: true });
        const index_ = JSON.parse(await readFile(join(dir, "index.json"), "utf8"));
        await variant.break(dir, index_.exchanges[0]);
        const ran = await runOnce(context, cwd, marker, [
          ...common,
          ...(variant.flags ?? []),
          "--replay",
          dir,
          "What does a.txt say?",
        ]);
        context.run();
        const label = `${variant.name}: exit ${ran.code ?? ran.signal}`;
        if (ran.hung) {
          context.fail("other", "hang", `${variant.name}: no exit`);
          continue;
        }
        const crash = crashOf(ran);
        if (crash) {
          context.fail("crashes", variant.name, `${crash}: ${ran.stderr.slice(-400)}`);
          continue;
        }
        if (!variant.codes.includes(ran.code ?? -1)) {
          context.fail(
            "other",
            "exit code",
            `${label}, not ${variant.codes.join(" or ")}: ${ran.stderr.slice(-300)}`,
          );
          continue;
        }
        if (ran.code !== 2) {
          try {
            JSON.parse(ran.stdout);
          } catch {
            context.fail("other", "no document", `${label}: ${ran.stdout.slice(0, 200)}`);
          }
        }
      }
    }
    if (fake.requests.length !== sent) {
      context.fail(
        "escapes",
        "network",
        `${fake.requests.length - sent} requests reached the provider during replays`,
      );
    }
  },
};
