/**
 * Several processes on one data directory: two, then three servers create, prompt and list
 * sessions at the same time; paging goes on while sessions are prompted; a session created in one
 * process, prompted in another, is listed with its title in a third (the second still alive) and
 * a fourth (the second gone). Every session is listed exactly once, with its title, everywhere.
 *
 * @module
 */
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import type { Server } from "../driver.ts";

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
  },
};
