import assert from "node:assert/strict";
import type { Host } from "../../src/host/host.ts";
import { JsonlSessionStore } from "../../src/store/jsonl_session_store.ts";
import { nullLogger } from "../../src/log/logger.ts";
import { SessionLockedError } from "../../src/store/session_store.ts";
import { ClockHost, header, names, sessionId, tempStore } from "./_helpers.ts";

/** The pid of a process that has exited (and been reaped). */
async function deadPid(host: Host): Promise<number> {
  const child = await host.spawn("/bin/sh", ["-c", "exit 0"], { cwd: "/" });
  await Promise.all([child.stdout.cancel(), child.stderr.cancel()]);
  await child.exited;
  assert.equal(host.isProcessAlive(child.pid), false);
  return child.pid;
}

function lockJson(pid: number, hostname: string): string {
  return JSON.stringify({ pid, hostname, time: new Date().toISOString() });
}

Deno.test("JsonlSessionStore.acquire(): a second acquire is refused until the lease is released", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  await store.create(header(id, host));
  const lease = await store.acquire(id);
  const lock = JSON.parse(await Deno.readTextFile(`${temp.dir}/locks/${id}.lock`));
  assert.equal(lock.pid, host.pid());
  assert.equal(lock.hostname, host.hostname());
  assert.equal(typeof lock.time, "string");

  const message = `session ${id} is already open in this acp-harness process (pid ${host.pid()})`;
  await assert.rejects(
    store.acquire(id),
    (error: unknown) => error instanceof SessionLockedError && error.message === message,
  );
  // Another store on the same directory (as a second server in this process would be).
  const other = temp.open();
  await assert.rejects(
    other.acquire(id),
    (error: unknown) => error instanceof SessionLockedError && error.message === message,
  );
  // Two racing acquires in one store: exactly one wins.
  const results = await Promise.allSettled([
    other.acquire(sessionId(2)),
    other.acquire(sessionId(2)),
  ]);
  assert.deepEqual(results.map((result) => result.status).sort(), ["fulfilled", "rejected"]);
  for (const result of results) if (result.status === "fulfilled") await result.value.release();

  await lease.release();
  await lease.release();
  await assert.rejects(Deno.stat(`${temp.dir}/locks/${id}.lock`), Deno.errors.NotFound);
  const again = await other.acquire(id);
  await again.release();
});

Deno.test("JsonlSessionStore.acquire(): a lock held by another live process is refused with its pid", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  await store.create(header(id, host));
  const sleeper = await host.spawn("/bin/sh", ["-c", "exec sleep 30"], { cwd: "/" });
  try {
    await Deno.mkdir(`${temp.dir}/locks`, { recursive: true });
    await Deno.writeTextFile(
      `${temp.dir}/locks/${id}.lock`,
      lockJson(sleeper.pid, host.hostname()),
    );
    await assert.rejects(
      store.acquire(id),
      (error: unknown) =>
        error instanceof SessionLockedError &&
        error.message ===
          `session ${id} is open in another acp-harness process (pid ${sleeper.pid})`,
    );
    // Delete refuses too: the other process may be writing the session.
    await assert.rejects(store.delete(id), SessionLockedError);
    assert.ok(await store.load(id));
  } finally {
    sleeper.kill("SIGKILL");
    await Promise.all([sleeper.stdout.cancel(), sleeper.stderr.cancel(), sleeper.exited]);
  }
  // Now the holder is dead: the lock is stale.
  const lease = await store.acquire(id);
  await lease.release();
});

Deno.test("JsonlSessionStore.acquire(): a dead process's lock is taken over, exactly once under contention", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  await store.create(header(id, host));
  const pid = await deadPid(host);
  const path = `${temp.dir}/locks/${id}.lock`;
  await Deno.mkdir(`${temp.dir}/locks`, { recursive: true });
  await Deno.writeTextFile(path, lockJson(pid, host.hostname()));

  const contenders = Array.from({ length: 8 }, () => temp.open());
  const results = await Promise.allSettled(contenders.map((store) => store.acquire(id)));
  const won = results.filter((result) => result.status === "fulfilled");
  assert.equal(won.length, 1, JSON.stringify(results.map((result) => result.status)));
  for (const result of results) {
    if (result.status === "rejected") assert.ok(result.reason instanceof SessionLockedError);
  }
  assert.equal(JSON.parse(await Deno.readTextFile(path)).pid, host.pid());
  await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
  await assert.rejects(Deno.stat(path), Deno.errors.NotFound);
  const leftovers = await names(`${temp.dir}/locks`);
  assert.deepEqual(leftovers, [], "no takeover guard or temp file is left");
});

Deno.test("JsonlSessionStore.acquire(): unparsable, foreign-host and replaced locks", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  const path = `${temp.dir}/locks/${id}.lock`;
  await Deno.mkdir(`${temp.dir}/locks`, { recursive: true });

  // Unparsable and fresh: probably being written; refused without a pid.
  await Deno.writeTextFile(path, "{");
  await assert.rejects(store.acquire(id), /open in another acp-harness process \(pid unknown\)/);
  // Unparsable and old: abandoned. (Ages compare the host clock with file times.)
  host.ms = Date.now();
  const old = new Date(Date.now() - 60_000);
  await Deno.utime(path, old, old);
  const lease = await store.acquire(id);
  await lease.release();

  // Another host: its pids mean nothing here, so never stale.
  const pid = await deadPid(host);
  await Deno.writeTextFile(path, lockJson(pid, "other-host.example"));
  await assert.rejects(
    store.acquire(id),
    new RegExp(`open in another acp-harness process \\(pid ${pid} on other-host\\.example\\)`),
  );
  await Deno.remove(path);

  // A lease does not remove a lock that is no longer its own.
  const mine = await store.acquire(id);
  await Deno.writeTextFile(path, lockJson(host.pid(), "someone-else"));
  await mine.release();
  assert.ok(await Deno.stat(path));
});

Deno.test("JsonlSessionStore.delete(): releases this process's lease and removes the lock", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const id = sessionId(1);
  const lease = await store.acquire(id);
  await store.create(header(id, host));
  await store.delete(id);
  await assert.rejects(Deno.stat(`${temp.dir}/locks/${id}.lock`), Deno.errors.NotFound);
  await lease.release();
  assert.equal(await store.load(id), undefined);
  const again = await temp.open().acquire(id);
  await again.release();
});

Deno.test("JsonlSessionStore: leases released together remove their locks, but not one replaced meanwhile", async () => {
  await using temp = await tempStore();
  const { store, host } = temp;
  const ids = Array.from({ length: 200 }, (_, n) => sessionId(n + 1));
  const leases = await Promise.all(ids.map(async (id) => {
    await store.create(header(id, host));
    return await store.acquire(id);
  }));
  const replaced = `${temp.dir}/locks/${ids[7]}.lock`;
  await Deno.writeTextFile(replaced, lockJson(host.pid(), "someone-else"));
  await Promise.all(leases.map((lease) => lease.release()));
  assert.deepEqual(await names(`${temp.dir}/locks`), [`${ids[7]}.lock`]);
  // Released: every other session can be taken again.
  const again = await Promise.all(ids.filter((_, n) => n !== 7).map((id) => store.acquire(id)));
  await Promise.all(again.map((lease) => lease.release()));
});

Deno.test("JsonlSessionStore.acquire(): a store's further locks are hard links to one it holds, each released on its own", async () => {
  await using temp = await tempStore();
  const { store } = temp;
  const lockOf = (n: number) => `${temp.dir}/locks/${sessionId(n)}.lock`;
  const first = await store.acquire(sessionId(1));
  const second = await store.acquire(sessionId(2));
  const [a, b] = await Promise.all([Deno.stat(lockOf(1)), Deno.stat(lockOf(2))]);
  assert.equal(a.ino, b.ino, "one file, two names");
  assert.equal(b.nlink, 2);
  await first.release();
  await assert.rejects(Deno.stat(lockOf(1)), Deno.errors.NotFound);
  assert.equal(JSON.parse(await Deno.readTextFile(lockOf(2))).pid, temp.host.pid());
  // The next lock links to the one still held.
  const third = await store.acquire(sessionId(3));
  assert.equal((await Deno.stat(lockOf(3))).ino, b.ino);
  // Another store (another holder) has a file of its own, with its own nonce.
  const other = await temp.open().acquire(sessionId(4));
  assert.notEqual((await Deno.stat(lockOf(4))).ino, b.ino);
  assert.notEqual(
    JSON.parse(await Deno.readTextFile(lockOf(4))).nonce,
    JSON.parse(await Deno.readTextFile(lockOf(3))).nonce,
  );
  await Promise.all([second.release(), third.release(), other.release()]);
  assert.deepEqual(await names(`${temp.dir}/locks`), []);
});

/** A host that records its hard links and touches, or (`links: false`) cannot make links. */
class LinkRecordingHost extends ClockHost {
  readonly calls: string[] = [];
  readonly #links: boolean;

  constructor(links: boolean) {
    super();
    this.#links = links;
  }

  override linkExclusive(existing: string, path: string): Promise<boolean> {
    this.calls.push(`link ${basename(existing)} ${basename(path)}`);
    if (!this.#links) return Promise.reject(new Error("EPERM: operation not permitted, link"));
    return super.linkExclusive(existing, path);
  }

  override touch(path: string): Promise<void> {
    this.calls.push(`touch ${basename(path)}`);
    return super.touch(path);
  }
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1);
}

Deno.test("JsonlSessionStore: without hard links, each lock is a file of its own", async () => {
  await using temp = await tempStore();
  const host = new LinkRecordingHost(false);
  const store = new JsonlSessionStore({ host, dataDir: temp.dir, logger: nullLogger });
  const first = await store.acquire(sessionId(1));
  const second = await store.acquire(sessionId(2));
  assert.deepEqual(host.calls, [`link ${sessionId(1)}.lock ${sessionId(2)}.lock`]);
  const [a, b] = await Promise.all([
    Deno.stat(`${temp.dir}/locks/${sessionId(1)}.lock`),
    Deno.stat(`${temp.dir}/locks/${sessionId(2)}.lock`),
  ]);
  assert.notEqual(a.ino, b.ino);
  await Promise.all([first.release(), second.release()]);
  assert.deepEqual(await names(`${temp.dir}/locks`), []);
});

Deno.test("JsonlSessionStore: index.lock is a hard link to a held lock, touched first so it looks fresh", async () => {
  await using temp = await tempStore();
  const host = new LinkRecordingHost(true);
  const store = new JsonlSessionStore({ host, dataDir: temp.dir, logger: nullLogger });
  const id = sessionId(1);
  const lease = await store.acquire(id);
  await store.create(header(id, host));
  const template = `${id}.lock`;
  // Each index write (the new index, then the session's line) links after a touch.
  assert.ok(host.calls.length >= 2);
  for (let i = 0; i < host.calls.length; i += 2) {
    assert.deepEqual(host.calls.slice(i, i + 2), [
      `touch ${template}`,
      `link ${template} index.lock`,
    ]);
  }
  await assert.rejects(Deno.stat(`${temp.dir}/index.lock`), Deno.errors.NotFound);
  assert.ok((await Deno.stat(`${temp.dir}/locks/${template}`)).isFile, "the lease's file stays");
  await lease.release();
});
