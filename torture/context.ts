/**
 * What a scenario gets (a runtime, a size, temp space, a marker) and what it returns (a tally of
 * runs and failures by kind).
 *
 * @module
 */
import { findMarked, hunt, killAll } from "../tests/_helpers/marked_processes.ts";
import { makeTempDir, removeTempDir } from "../tests/_helpers/temp_dir.ts";
import { type RuntimeSpec, Server, type ServerOptions } from "./driver.ts";

/** The failure kinds of the table. "other" failures carry a sub-kind. */
export type FailureKind =
  | "crashes"
  | "lost"
  | "leftovers"
  | "unconsented"
  | "escapes"
  | "other";

/** The counts of one scenario on one runtime. */
export interface Tally {
  runs: number;
  crashes: number;
  lost: number;
  leftovers: number;
  unconsented: number;
  escapes: number;
  other: number;
  /** Failure counts by detailed kind (`other:hang`, `unconsented`, …). */
  readonly kinds: Map<string, number>;
  /** A few examples per kind. */
  readonly examples: Map<string, string[]>;
  seconds: number;
}

/** An empty tally. */
export function emptyTally(): Tally {
  return {
    runs: 0,
    crashes: 0,
    lost: 0,
    leftovers: 0,
    unconsented: 0,
    escapes: 0,
    other: 0,
    kinds: new Map(),
    examples: new Map(),
    seconds: 0,
  };
}

/** Run sizes: `full` (deno task torture), `quick` (--quick) and `test` (the regular tests). */
export type Size = "full" | "quick" | "test";

/** What a scenario runs with. */
export class ScenarioContext {
  readonly runtime: RuntimeSpec;
  readonly size: Size;
  readonly tally: Tally = emptyTally();
  /** A temporary directory for this scenario (removed by {@link finish}). */
  readonly base: string;
  /** The marker of every server this scenario starts (unless given its own). */
  readonly marker: string;
  readonly seed: number;
  readonly #servers: Server[] = [];
  readonly #markers = new Set<string>();
  readonly #crashed = new Set<Server>();

  private constructor(runtime: RuntimeSpec, size: Size, base: string, seed: number) {
    this.runtime = runtime;
    this.size = size;
    this.base = base;
    this.seed = seed;
    this.marker = this.newMarker();
  }

  /** A context with its own temporary directory. */
  static async create(runtime: RuntimeSpec, size: Size, seed: number): Promise<ScenarioContext> {
    return new ScenarioContext(
      runtime,
      size,
      await makeTempDir(`acp-torture-${runtime.name}-`),
      seed,
    );
  }

  /** A fresh unique marker, hunted for at the end. */
  newMarker(): string {
    const marker = `acp-torture-${crypto.randomUUID()}`;
    this.#markers.add(marker);
    return marker;
  }

  /** Picks the count for this size. */
  pick(full: number, quick: number, test: number): number {
    return this.size === "full" ? full : this.size === "quick" ? quick : test;
  }

  /** Starts a server on this runtime (marker defaults to the scenario's). */
  start(options: Omit<ServerOptions, "marker"> & { marker?: string }): Server {
    const server = Server.start(this.runtime, { marker: this.marker, ...options });
    this.#servers.push(server);
    return server;
  }

  /** Counts one run. */
  run(count = 1): void {
    this.tally.runs += count;
  }

  /** Counts a failure of `kind` (`other` needs a detail such as `hang`). */
  fail(kind: FailureKind, detail: string, example: string, count = 1): void {
    if (count <= 0) return;
    this.tally[kind] += count;
    const key = kind === "other" ? `other:${detail}` : `${kind}:${detail}`;
    this.tally.kinds.set(key, (this.tally.kinds.get(key) ?? 0) + count);
    const examples = this.tally.examples.get(key) ?? [];
    if (examples.length < 3) examples.push(example.slice(0, 400));
    this.tally.examples.set(key, examples);
  }

  /** Counts a crash of `server` once (non-zero exit, non-JSON stdout). */
  checkCrash(server: Server, where: string): boolean {
    const reason = server.crash();
    if (reason === undefined || this.#crashed.has(server)) return reason !== undefined;
    this.#crashed.add(server);
    this.fail("crashes", where, reason);
    return true;
  }

  /**
   * Counts a crash when `server` no longer answers (exited or silent within `ms`).
   * Returns whether it answered.
   */
  async checkAnswers(server: Server, where: string, ms = 10_000): Promise<boolean> {
    if (await server.answers(ms)) return true;
    if (!this.checkCrash(server, where) && !this.#crashed.has(server)) {
      this.#crashed.add(server);
      this.fail(
        "crashes",
        where,
        server.exit
          ? `exited ${JSON.stringify(server.exit)}: ${server.stderr.slice(-300)}`
          : `stopped answering: ${server.stderr.slice(-300)}`,
      );
    }
    return false;
  }

  /**
   * Stops every server still running (stdin close), counts crashes and leftover processes, then
   * removes the temporary directory.
   */
  async finish(): Promise<Tally> {
    for (const server of this.#servers) {
      if (!server.exit) {
        const exited = await server.stop(10_000);
        if (!exited) this.fail("other", "slow-exit", "did not exit within 10 s of stdin EOF");
      }
      this.checkCrash(server, "end");
    }
    for (const marker of this.#markers) {
      const left = await hunt(marker, 2_000);
      if (left.length > 0) {
        this.fail(
          "leftovers",
          "after-scenario",
          left.map(({ command }) => command).join("; "),
          left.length,
        );
        killAll(left);
      }
    }
    await removeTempDir(this.base).catch(() => {});
    return this.tally;
  }

  /** Kills whatever still carries one of this context's markers (no counting). */
  async sweep(): Promise<void> {
    for (const marker of this.#markers) killAll(await findMarked(marker));
  }
}

/** A scenario: a name, what it checks, and the body. */
export interface Scenario {
  readonly name: string;
  readonly description: string;
  /**
   * Whether the runtimes run it one after another rather than side by side (default): for a
   * scenario whose cases load the machine enough (50 MiB results, floods, 1 MiB garbage lines)
   * that three runtimes at once on two cores miss its time limits, which are about the server
   * holding up its own work, not about the machine.
   */
  readonly alone?: boolean;
  run(context: ScenarioContext): Promise<void>;
}
