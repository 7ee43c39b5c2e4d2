/**
 * Several processes on one data directory: two, then three servers create, prompt and list
 * sessions at the same time; paging goes on while sessions are prompted; a session created in one
 * process, prompted in another, is listed with its title in a third (the second still alive) and
 * a fourth (the second gone). Every session is listed exactly once, with its title, everywhere.
 * Then two logs are made unreadable (a garbage line in the middle, a cut header) and the index
 * deleted: `session/list` lists the others, `copy-sessions` copies them, names both and exits 1;
 * once one is repaired, a list shows it again and a second copy copies it.
 *
 * @module
 */
import { spawn } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { MARKER_VARIABLE, type Server } from "../driver.ts";

type Item = { sessionId: string; title?: string | null };

/** Pages through `session/list`; returns every item, or undefined when a page fails. */
async function listAll(server: Server, cwd?: string): Promise<Item[] | undefined> {
  const items: Item[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 1_000; page++) {
    const result = await server.call(
      "session/list",
      { ...(cwd ? { cwd } : {}), ...(cursor ? { cursor } : {}) },
      20_000,
    );
    if (result === undefined || "error" in result) return undefined;
    const { sessions, nextCursor } = result.result as { sessions: Item[]; nextCursor?: string };
    items.push(...sessions);
    if (!nextCursor) return items;
    cursor = nextCursor;
  }
  return items;
}

/** Checks a listing against the expected sessions and titles. */
function checkListing(
  context: ScenarioContext,
  where: string,
  listing: Item[] | undefined,
  expected: ReadonlyMap<string, string>,
): void {
  context.run();
  if (listing === undefined) {
    context.fail("other", "list-failed", `${where}: session/list failed`);
    return;
  }
  const seen = new Map<string, number>();
  for (const item of listing) seen.set(item.sessionId, (seen.get(item.sessionId) ?? 0) + 1);
  for (const [sessionId, title] of expected) {
    const count = seen.get(sessionId) ?? 0;
    if (count === 0) context.fail("other", "list-missing", `${where}: ${sessionId} not listed`);
    if (count > 1) {
      context.fail("other", "list-duplicate", `${where}: ${sessionId} listed ${count} times`);
    }
    const item = listing.find((entry) => entry.sessionId === sessionId);
    if (item && !item.title) {
      context.fail(
        "other",
        "title-missing",
        `${where}: ${sessionId} has no title (expected "${title}")`,
      );
    }
  }
}

/** Runs `copy-sessions` on the scenario's runtime; resolves with its exit code and stderr. */
function copySessions(
  context: ScenarioContext,
  from: string,
  to: string,
): Promise<{ code: number | null; stderr: string }> {
  const { command, args } = context.runtime;
  return new Promise((resolve) => {
    const child = spawn(command, [...args, "copy-sessions", "--from", from, "--to", to], {
      stdio: ["ignore", "ignore", "pipe"],
      env: { ...process.env, NO_COLOR: "1", [MARKER_VARIABLE]: context.marker },
    });
    let stderr = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (text: string) => stderr += text);
    const timer = setTimeout(() => child.kill("SIGKILL"), 60_000); // a bound on a hung copy
    child.on("error", (error) => stderr += String(error));
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

/** Checks a `copy-sessions` run: its exit code, what it copied, the sessions it names. */
function checkCopy(
  context: ScenarioContext,
  where: string,
  result: { code: number | null; stderr: string },
  copied: number,
  unreadable: readonly string[],
): void {
  context.run();
  const problems: string[] = [];
  if (result.code !== 1) problems.push(`exit ${result.code}`);
  if (!result.stderr.includes(`copy-sessions: ${copied} copied, `)) problems.push("copied count");
  if (!result.stderr.includes(`copy-sessions: ${unreadable.length} of `)) {
    problems.push("unreadable count");
  }
  for (const id of unreadable) if (!result.stderr.includes(`  ${id}: `)) problems.push(id);
  if (problems.length > 0) {
    context.fail(
      "other",
      "unreadable-uncounted",
      `${where}: ${problems.join(", ")}: ${result.stderr.slice(-400)}`,
    );
  }
}

/**
 * Two logs made unreadable and the index deleted: listed and copied without them, both counted;
 * the repaired one listed and copied again.
 */
async function unreadableLogs(
  context: ScenarioContext,
  options: { dataDir: string; cwd: string; args: readonly string[] },
  expected: ReadonlyMap<string, string>,
): Promise<void> {
  const { dataDir, cwd, args } = options;
  const [garbled, cut] = [...expected.keys()];
  if (garbled === undefined || cut === undefined) return;
  const log = (id: string): string => join(dataDir, "sessions", `${id}.jsonl`);
  const original = await readFile(log(garbled), "utf8");
  const lines = original.split("\n");
  lines[Math.floor(lines.length / 2)] = "garbage";
  await writeFile(log(garbled), lines.join("\n"));
  await writeFile(log(cut), (await readFile(log(cut), "utf8")).slice(0, 30));
  await rm(join(dataDir, "index.jsonl"));
  const readable = new Map([...expected].filter(([id]) => id !== garbled && id !== cut));
  const copy = join(context.base, "copy");

  const list = async (where: string, wanted: ReadonlyMap<string, string>): Promise<void> => {
    const server = context.start({ dataDir, cwd: context.base, args });
    await server.initialize();
    const listing = await listAll(server, cwd);
    checkListing(context, where, listing, wanted);
    const shown = listing?.filter((item) => !wanted.has(item.sessionId)) ?? [];
    if (shown.length > 0) {
      context.fail("other", "list-unreadable", `${where}: ${shown.map((item) => item.sessionId)}`);
    }
    await server.stop();
  };
  await list("unreadable logs, index rebuilt", readable);
  checkCopy(context, "first copy", await copySessions(context, dataDir, copy), readable.size, [
    garbled,
    cut,
  ]);
  await writeFile(log(garbled), original);
  await list("a repaired log", new Map([...readable, [garbled, expected.get(garbled)!]]));
  checkCopy(context, "second copy", await copySessions(context, dataDir, copy), 1, [cut]);
}

/** See the module doc. */
export const sharedData: Scenario = {
  name: "shared-data",
  description: "2 and 3 servers on one data dir: create, prompt, page, list; titles everywhere",
  async run(context: ScenarioContext): Promise<void> {
    const perProcess = context.pick(25, 8, 4);
    const dataDir = join(context.base, "data");
    const cwd = join(context.base, "ws");
    await mkdir(cwd, { recursive: true });
    const config = join(context.base, "config.json");
    await writeFile(config, JSON.stringify({ sessionListPageSize: 7 }));
    const args = ["--config", config];
    const expected = new Map<string, string>();
    const owner = new Map<string, Server>();
    for (const count of [2, 3]) {
      const servers = Array.from(
        { length: count },
        () => context.start({ dataDir, cwd: context.base, args }),
      );
      await Promise.all(servers.map((server) => server.initialize()));
      // Create and prompt at the same time in every process.
      await Promise.all(servers.map(async (server, p) => {
        for (let n = 0; n < perProcess; n++) {
          const sessionId = await server.newSession(cwd);
          const text = `p${count}.${p} session ${n}`;
          const prompt = server.promptRequest(sessionId, text);
          await server.write(prompt.frame);
          if ((await server.response(prompt.id, 20_000)) === undefined) {
            context.fail("other", "hang", `${text}: no answer`);
          }
          expected.set(sessionId, text);
          owner.set(sessionId, server);
        }
      }));
      // Page through the list everywhere while every process prompts its oldest sessions again.
      await Promise.all(servers.flatMap((server, p) => [
        (async () => {
          const listing = await listAll(server, cwd);
          checkListing(context, `${count} processes, process ${p}`, listing, expected);
        })(),
        (async () => {
          const mine = [...owner].filter(([, by]) => by === server).map(([id]) => id).slice(0, 5);
          for (const sessionId of mine) {
            const prompt = server.promptRequest(sessionId, "again");
            await server.write(prompt.frame);
            await server.response(prompt.id, 20_000);
          }
        })(),
      ]));
      for (const server of servers) await server.stop();
      for (const [sessionId, by] of owner) if (servers.includes(by)) owner.delete(sessionId);
    }
    // Created in A, prompted in B, listed in C (B alive) and D (B gone).
    for (let n = 0; n < Math.max(1, Math.floor(perProcess / 4)); n++) {
      const a = context.start({ dataDir, cwd: context.base, args });
      await a.initialize();
      const sessionId = await a.newSession(cwd);
      await a.call("session/close", { sessionId });
      const b = context.start({ dataDir, cwd: context.base, args });
      await b.initialize();
      await b.result("session/resume", { sessionId, cwd, mcpServers: [] });
      const text = `resumed elsewhere ${n}`;
      const prompt = b.promptRequest(sessionId, text);
      await b.write(prompt.frame);
      await b.response(prompt.id, 20_000);
      expected.set(sessionId, text);
      const c = context.start({ dataDir, cwd: context.base, args });
      await c.initialize();
      checkListing(context, "third process, second alive", await listAll(c, cwd), expected);
      await b.stop();
      await a.stop();
      await c.stop();
      const d = context.start({ dataDir, cwd: context.base, args });
      await d.initialize();
      checkListing(context, "fourth process, second gone", await listAll(d, cwd), expected);
      await d.stop();
    }
    // One process, paging while the oldest session is prompted between two pages.
    const e = context.start({ dataDir, cwd: context.base, args });
    await e.initialize();
    const first = await e.call("session/list", { cwd }, 20_000);
    const page1 = first?.result as { sessions: Item[]; nextCursor?: string } | undefined;
    const seenPaged: Item[] = [...(page1?.sessions ?? [])];
    const all = await listAll(e, cwd);
    const oldest = all?.at(-1)?.sessionId;
    if (oldest && page1?.nextCursor) {
      await e.result("session/resume", { sessionId: oldest, cwd, mcpServers: [] });
      const prompt = e.promptRequest(oldest, "bump");
      await e.write(prompt.frame);
      await e.response(prompt.id, 20_000);
      let cursor: string | undefined = page1.nextCursor;
      while (cursor) {
        const page = await e.call("session/list", { cwd, cursor }, 20_000);
        const result = page?.result as { sessions: Item[]; nextCursor?: string } | undefined;
        if (!result) break;
        seenPaged.push(...result.sessions);
        cursor = result.nextCursor;
      }
      checkListing(context, "paging while the oldest is prompted", seenPaged, expected);
    }
    await e.stop();
    await unreadableLogs(context, { dataDir, cwd, args }, expected);
  },
};
