import assert from "node:assert/strict";
import { mkdir, readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { exitWithin, spawnAgent } from "../_helpers/acp_client.ts";
import { RUNTIMES } from "../_helpers/runtimes.ts";
import { tempDir } from "../_helpers/temp_dir.ts";

const SESSIONS = 300;

/** The last `updatedAt` the index file gives each session (its lines apply in order). */
async function indexedUpdates(dataDir: string): Promise<Map<string, string>> {
  const text = await readFile(join(dataDir, "index.jsonl"), "utf8");
  const [header, ...lines] = text.split("\n").filter((line) => line !== "");
  assert.equal(JSON.parse(header!).acpHarnessIndex, 1);
  const updated = new Map<string, string>();
  for (const line of lines) {
    const entry = JSON.parse(line) as { id: string; updatedAt?: string; deleted?: true };
    if (entry.deleted) updated.delete(entry.id);
    else updated.set(entry.id, entry.updatedAt!);
  }
  return updated;
}

/** The time of the last record of a session's log. */
async function lastRecordTime(dataDir: string, id: string): Promise<string> {
  const lines = (await readFile(join(dataDir, "sessions", `${id}.jsonl`), "utf8")).trimEnd()
    .split("\n");
  assert.ok(lines.length > 1, `session ${id} has records`);
  return (JSON.parse(lines.at(-1)!) as { time: string }).time;
}

for (const runtime of RUNTIMES) {
  Deno.test(`${runtime.name}: stdin EOF with ${SESSIONS} sessions open writes every session's final state and removes every lock`, async () => {
    await using dir = await tempDir("acp-harness-shutdown-");
    const cwd = join(dir.path, "ws");
    const dataDir = join(dir.path, "data");
    await mkdir(cwd);
    const agent = spawnAgent(runtime.command, [...runtime.args, "--data-dir", dataDir], {
      cwd,
      env: Deno.env.toObject(),
    });
    const { client } = agent;
    await client.initialize();
    const ids: string[] = [];
    for (let n = 0; n < SESSIONS; n++) ids.push(await client.newSession(cwd));
    // Some sessions have a turn too, so their last record is later than their creation.
    for (const id of ids.filter((_, n) => n % 30 === 0)) {
      assert.equal(await client.prompt(id, "hello"), "end_turn");
    }
    assert.equal((await readdir(join(dataDir, "locks"))).length, SESSIONS);

    agent.end();
    assert.equal(await exitWithin(agent, 30_000), 0);
    assert.doesNotMatch(agent.stderr(), /did not settle/);
    assert.deepEqual(await readdir(join(dataDir, "locks")), [], "every lock is removed");
    assert.ok(!(await readdir(dataDir)).includes("index.lock"), "the index lock is released");
    const indexed = await indexedUpdates(dataDir);
    assert.deepEqual([...indexed.keys()].sort(), [...ids].sort());
    for (const id of ids) {
      assert.equal(indexed.get(id), await lastRecordTime(dataDir, id), `updatedAt of ${id}`);
    }
    assert.deepEqual(client.problems, []);
  });
}
