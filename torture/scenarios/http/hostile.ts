/**
 * Phase 1 of the `http` scenario: the hostile traffic, in batches, with the server checked
 * after each.
 *
 * @module
 */
import { random } from "../../driver.ts";
import type { KeyedClient, RfdClient } from "../../http_client.ts";
import {
  alive,
  client,
  closeClient,
  connected,
  type Env,
  keepingAlive,
  wholePrompt,
  workspace,
} from "./_shared.ts";
import { fuzzProbe, type Probe, runProbe, type Victims } from "./probes.ts";
import { disconnectProbes } from "./disconnect_probes.ts";
import { fixedProbes } from "./probe_tables.ts";
import { wsFuzz, wsProbes } from "./ws_probes.ts";

/** Connects the victims (again, when one was lost); false when the server refuses. */
async function connectVictims(
  env: Env,
  victims: Partial<Victims> & { cwd: string },
): Promise<boolean> {
  if (victims.acp === undefined || victims.acp.ended) {
    const acp = client(env, "acp") as RfdClient;
    if (!(await connected(env, "hostile: the /acp victim", acp))) return false;
    const session = await acp.newSession(victims.cwd);
    if (session === undefined) return false;
    victims.acp = acp;
    victims.session = session;
  }
  if (victims.keyed === undefined || victims.keyed.ended) {
    // The same URL key: the probes aim at it.
    const keyed = client(env, "keyed", victims.keyed?.key) as KeyedClient;
    if (!(await connected(env, "hostile: the /v1/acp victim", keyed))) return false;
    victims.keyed = keyed;
  }
  return true;
}

export async function hostile(env: Env): Promise<void> {
  const { context } = env;
  const rng = random(context.seed + 21);
  const partial: Partial<Victims> & { cwd: string } = { cwd: await workspace(env, "victim") };
  if (!(await connectVictims(env, partial))) throw new Error("Cannot connect the victims");
  const victims = partial as Victims;
  let probes: Array<() => Probe> = [
    ...fixedProbes(env, victims, rng),
    ...[...wsProbes(rng), ...disconnectProbes()].map((probe) => () => probe),
  ];
  if (context.size === "test") probes = probes.filter((_, index) => index % 4 === 0);
  const fuzz = context.pick(300, 80, 24);
  for (let n = 0; n < fuzz; n++) probes.push(() => fuzzProbe(env, rng, n, victims));
  const frames = context.pick(40, 12, 4);
  for (let n = 0; n < frames; n++) {
    const probe = wsFuzz(rng, n);
    probes.push(() => probe);
  }
  const batch = 12;
  for (let start = 0; start < probes.length; start += batch) {
    // Made one after another, so that the random choices do not depend on timing.
    const slice = probes.slice(start, start + batch).map((make) => make());
    await keepingAlive(
      Promise.all(slice.map((probe) => runProbe(env, probe))),
      [victims.acp, victims.keyed],
    );
    context.run(slice.length);
    const where = `hostile: after "${slice[0]?.label}" and ${slice.length - 1} more`;
    if (!(await alive(env, where))) return;
    // The live connections still answer. (A URL key whose connection is gone gets a new one,
    // which answers "not initialized".)
    for (const live of [victims.acp, victims.keyed]) {
      const answer = await live.call("session/list", { cwd: victims.cwd }, 10_000);
      if (answer.frame !== undefined && "result" in answer.frame) continue;
      const lost = answer.status === 404 ||
        JSON.stringify(answer.frame ?? "").includes("must be initialized");
      context.fail(
        "other",
        lost ? "connection-lost" : "wedged",
        `${where}: the ${live.profile} victim's session/list: ${
          JSON.stringify(answer).slice(0, 200)
        }; ${lastLines(env.server.stderr, /router stopped|failed|Error|idle/)}`,
      );
      live.vanish();
      await live.settled();
    }
    if (!(await connectVictims(env, victims))) {
      env.broken = true;
      context.fail("other", "wedged", `${where}: new victims cannot connect`);
      return;
    }
  }
  // Clean clients can still run whole prompts (both at once: neither sits idle meanwhile).
  await Promise.all([victims.acp, victims.keyed].map(async (live) => {
    context.run();
    const what = `hostile: the ${live.profile} victim`;
    await wholePrompt(env, what, live, await workspace(env, `victim-${live.profile}`));
    await closeClient(env, what, live);
  }));
}

/** The last line of `text` matching `pattern` (for a failure's example). */
function lastLines(text: string, pattern: RegExp): string {
  return text.split("\n").filter((line) => pattern.test(line)).slice(-1).join(" ").slice(0, 300);
}
