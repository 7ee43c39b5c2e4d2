import { pollUntil } from "../_helpers/wait.ts";
import assert from "node:assert/strict";
import { stat, writeFile } from "node:fs/promises";
import process from "node:process";
import { makeTempDir, removeTempDir, tempDir } from "../_helpers/temp_dir.ts";
import { waitGone as gone } from "./_processes.ts";
import type { HostProcess } from "../../src/host/host.ts";
import { NodeHost } from "../../src/host/node_host.ts";

/** Reads `stream` line by line until `count` lines arrived; keeps reading the rest in the background. */
async function readLines(
  stream: ReadableStream<Uint8Array>,
  count: number,
): Promise<{ lines: string[]; rest: Promise<string> }> {
  const reader = stream.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (text.split("\n").length <= count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  const rest = (async (): Promise<string> => {
    let tail = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return tail;
      tail += value;
    }
  })();
  return { lines: text.split("\n").slice(0, count), rest };
}

async function drain(child: HostProcess): Promise<{ stdout: string; stderr: string }> {
  const [stdout, stderr] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  return { stdout, stderr };
}

Deno.test("NodeHost.spawn() runs a command with cwd and extra env and reports its exit", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost({ PATH: process.env.PATH, FROM_HOST: "host" });
    const child = await host.spawn(
      "/bin/sh",
      ["-c", 'pwd; echo "$FROM_HOST $EXTRA"; echo oops >&2; exit 3'],
      { cwd: dir, env: { EXTRA: "extra" } },
    );
    assert.ok(child.pid > 0);
    const output = await drain(child);
    assert.deepEqual(output, { stdout: `${dir}\nhost extra\n`, stderr: "oops\n" });
    assert.deepEqual(await child.exited, { code: 3, signal: null });
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.spawn() filters the inherited environment by names, prefix patterns and exclusions", async () => {
  const host = new NodeHost({
    PATH: process.env.PATH,
    HOME: "/home/me",
    LC_CTYPE: "C.UTF-8",
    LC_TIME: "C",
    OPENAI_API_KEY: "sk-secret",
    ACP_HARNESS_TOKEN: "token",
    CI_SOME_VAR: "ci",
  });
  const names = async (options: Parameters<NodeHost["spawn"]>[2]): Promise<string[]> => {
    const child = await host.spawn("/bin/sh", ["-c", "env"], options);
    const { stdout } = await drain(child);
    await child.exited;
    return stdout.split("\n").filter(Boolean).map((line) => line.slice(0, line.indexOf("=")))
      .filter((name) =>
        !name.startsWith("ACP_HARNESS_OWNER_") && name !== "PWD" && name !== "SHLVL" && name !== "_"
      )
      .sort();
  };
  assert.deepEqual(await names({ cwd: "/", inheritEnv: ["PATH", "HOME", "LC_*"] }), [
    "HOME",
    "LC_CTYPE",
    "LC_TIME",
    "PATH",
  ]);
  assert.deepEqual(
    await names({
      cwd: "/",
      excludeEnv: ["OPENAI_API_KEY", "ACP_HARNESS_*"],
      env: { ACP_HARNESS_TOKEN: "declared" },
    }),
    ["ACP_HARNESS_TOKEN", "CI_SOME_VAR", "HOME", "LC_CTYPE", "LC_TIME", "OPENAI_API_KEY", "PATH"]
      .filter((name) => name !== "OPENAI_API_KEY"),
  );
  const child = await host.spawn("/bin/sh", ["-c", 'echo "$ACP_HARNESS_TOKEN"'], {
    cwd: "/",
    excludeEnv: ["ACP_HARNESS_TOKEN"],
    env: { ACP_HARNESS_TOKEN: "declared" },
  });
  assert.equal((await drain(child)).stdout, "declared\n", "a declared variable wins");
  await child.exited;
});

Deno.test("NodeHost.spawn() puts the child in its own process group", async () => {
  const child = await new NodeHost().spawn("/bin/sh", ["-c", "ps -o pgid= -p $$"], { cwd: "/" });
  const { stdout } = await drain(child);
  assert.equal(Number(stdout.trim()), child.pid);
  assert.equal((await child.exited).code, 0);
});

Deno.test("NodeHost.spawn() rejects when the command or the cwd does not exist", async () => {
  const host = new NodeHost();
  await assert.rejects(
    host.spawn("/nonexistent/command", [], { cwd: "/" }),
    (error: unknown) => (error as { code?: string }).code === "ENOENT",
  );
  await assert.rejects(
    host.spawn("no-such-command-acp-harness", [], { cwd: "/" }),
    (error: unknown) => (error as { code?: string }).code === "ENOENT",
  );
  await assert.rejects(host.spawn("/bin/sh", ["-c", "true"], { cwd: "/nonexistent/dir" }));
});

Deno.test("NodeHost.spawn() rejects with the reason when the signal is already aborted", async () => {
  const controller = new AbortController();
  const reason = new Error("stop");
  controller.abort(reason);
  await assert.rejects(
    new NodeHost().spawn("/bin/sh", ["-c", "true"], { cwd: "/", signal: controller.signal }),
    (error: unknown) => error === reason,
  );
});

Deno.test("NodeHost.spawn() abort kills the whole process group, grandchildren included", async () => {
  const controller = new AbortController();
  const child = await new NodeHost().spawn(
    "/bin/sh",
    ["-c", "sleep 30 & echo $!; sleep 30 & echo $!; wait"],
    { cwd: "/", signal: controller.signal },
  );
  const { lines, rest } = await readLines(child.stdout, 2);
  const pids = lines.map(Number);
  assert.equal(pids.length, 2);
  assert.ok(pids.every((pid) => pid > 0 && pid !== child.pid));
  assert.deepEqual(await gone(pids, 0), pids, "the grandchildren run before the abort");
  const started = Date.now();
  controller.abort();
  const [exit] = await Promise.all([child.exited, rest, child.stderr.cancel()]);
  assert.deepEqual(exit, { code: null, signal: "SIGTERM" });
  assert.ok(Date.now() - started < 1_500, "SIGTERM was enough, no SIGKILL wait");
  assert.deepEqual(await gone([child.pid, ...pids]), []);
  // The op sanitizer fails this test if the SIGKILL timer were still pending.
});

Deno.test("NodeHost.spawn() abort escalates to SIGKILL when SIGTERM is ignored", async () => {
  const controller = new AbortController();
  const child = await new NodeHost().spawn(
    "/bin/sh",
    ["-c", "trap '' TERM; sleep 30 & echo $!; wait"],
    { cwd: "/", signal: controller.signal },
  );
  const { lines, rest } = await readLines(child.stdout, 1);
  const started = Date.now();
  controller.abort();
  const [exit] = await Promise.all([child.exited, rest, child.stderr.cancel()]);
  const elapsed = Date.now() - started;
  assert.deepEqual(exit, { code: null, signal: "SIGKILL" });
  assert.ok(elapsed >= 1_900 && elapsed < 5_000, `killed after ${elapsed} ms`);
  assert.deepEqual(await gone([Number(lines[0])]), []);
});

Deno.test("NodeHost.spawn() kill() signals the group and is a no-op after exit", async () => {
  const child = await new NodeHost().spawn(
    "/bin/sh",
    ["-c", "sleep 30 & echo $!; wait"],
    { cwd: "/" },
  );
  const { lines, rest } = await readLines(child.stdout, 1);
  child.kill("SIGKILL");
  const [exit] = await Promise.all([child.exited, rest, child.stderr.cancel()]);
  assert.deepEqual(exit, { code: null, signal: "SIGKILL" });
  assert.deepEqual(await gone([Number(lines[0])]), []);
  child.kill();
  child.kill("SIGKILL");
});

Deno.test("NodeHost.spawn() abort after exit does nothing", async () => {
  const controller = new AbortController();
  const child = await new NodeHost().spawn("/bin/sh", ["-c", "exit 0"], {
    cwd: "/",
    signal: controller.signal,
  });
  await drain(child);
  assert.deepEqual(await child.exited, { code: 0, signal: null });
  controller.abort();
});

Deno.test("NodeHost.spawn() streams large output with backpressure and survives a cancel", async () => {
  const host = new NodeHost();
  const big = await host.spawn("/bin/sh", ["-c", "head -c 3000000 /dev/zero"], { cwd: "/" });
  const [stdout] = await Promise.all([
    new Response(big.stdout).arrayBuffer(),
    big.stderr.cancel(),
  ]);
  assert.equal(stdout.byteLength, 3_000_000);
  assert.equal((await big.exited).code, 0);

  // `yes` never ends by itself: cancelling stdout closes the pipe and it dies of SIGPIPE.
  const endless = await host.spawn("yes", [], { cwd: "/" });
  const reader = endless.stdout.getReader();
  assert.equal((await reader.read()).done, false);
  await reader.cancel();
  await endless.stderr.cancel();
  const exit = await endless.exited;
  assert.ok(exit.signal === "SIGPIPE" || exit.code !== 0, JSON.stringify(exit));
});

Deno.test("NodeHost.spawn() abort still settles when a process that left the group holds the pipes", async () => {
  const controller = new AbortController();
  const child = await new NodeHost().spawn(
    "/bin/sh",
    ["-c", "setsid sleep 30 & echo $!; wait"],
    { cwd: "/", signal: controller.signal },
  );
  const { lines, rest } = await readLines(child.stdout, 1);
  const escaped = Number(lines[0]);
  try {
    // Wait until it has left the group: until then the group kill would still reach it. Only
    // /proc tells (no event): poll it.
    await pollUntil(async () => {
      const stat = await Deno.readTextFile(`/proc/${escaped}/stat`);
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]) === escaped;
    }, { what: "the process left the group" });
    controller.abort();
    const [exit] = await Promise.all([child.exited, rest, child.stderr.cancel()]);
    assert.equal(exit.code, null);
  } finally {
    process.kill(escaped, "SIGKILL");
  }
});

Deno.test("NodeHost.spawn() keeps stdin closed (/dev/null) by default", async () => {
  const child = await new NodeHost().spawn("cat", [], { cwd: "/" });
  assert.equal(child.stdin, undefined);
  assert.deepEqual(await drain(child), { stdout: "", stderr: "" });
  assert.deepEqual(await child.exited, { code: 0, signal: null });
});

Deno.test("NodeHost.spawn() with stdin piped: the child reads each write, and the end on close", async () => {
  const child = await new NodeHost().spawn("cat", [], { cwd: "/", stdin: "piped" });
  const writer = child.stdin.getWriter();
  const encoder = new TextEncoder();
  const stdout = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const readLine = async (): Promise<string> => {
    let text = "";
    while (!text.endsWith("\n")) {
      const { value, done } = await stdout.read();
      if (done) break;
      text += value;
    }
    return text;
  };
  // Round trips: the pipe stays open between writes (a protocol over stdio).
  await writer.write(encoder.encode("ping\n"));
  assert.equal(await readLine(), "ping\n");
  await writer.write(encoder.encode("pong\n"));
  assert.equal(await readLine(), "pong\n");
  // More than any pipe buffer: writes wait for the child to read (backpressure), nothing is lost.
  const big = new Uint8Array(2_000_000).fill(0x61);
  const written = (async (): Promise<void> => {
    await writer.write(big);
    await writer.close();
  })();
  let echoed = 0;
  for (;;) {
    const { value, done } = await stdout.read();
    if (done) break;
    echoed += value.length;
  }
  await Promise.all([written, child.stderr.cancel()]);
  assert.equal(echoed, big.length);
  assert.deepEqual(await child.exited, { code: 0, signal: null });
});

Deno.test("NodeHost.spawn() abort kills a child whose piped stdin is open; later writes reject", async () => {
  const controller = new AbortController();
  const child = await new NodeHost().spawn("cat", [], {
    cwd: "/",
    stdin: "piped",
    signal: controller.signal,
  });
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode("1\n"));
  const { lines, rest } = await readLines(child.stdout, 1);
  assert.deepEqual(lines, ["1"]);
  controller.abort();
  const [exit] = await Promise.all([child.exited, rest, child.stderr.cancel()]);
  assert.deepEqual(exit, { code: null, signal: "SIGTERM" });
  assert.deepEqual(await gone([child.pid], 0), []);
  await assert.rejects(writer.write(new TextEncoder().encode("late\n")));
});

Deno.test("NodeHost.spawn() with stdin piped: a write the child stops reading rejects, nothing throws", async () => {
  // `head` exits after one byte: the rest of the write meets a closed pipe (EPIPE).
  const child = await new NodeHost().spawn("head", ["-c", "1"], { cwd: "/", stdin: "piped" });
  const writer = child.stdin.getWriter();
  const [written, output] = await Promise.allSettled([
    writer.write(new Uint8Array(2_000_000).fill(0x62)),
    drain(child),
  ]);
  assert.equal(written.status, "rejected");
  assert.deepEqual(output, { status: "fulfilled", value: { stdout: "b", stderr: "" } });
  assert.deepEqual(await child.exited, { code: 0, signal: null });
});

Deno.test("NodeHost.stopProcesses() ends a child whose piped stdin is open", async () => {
  const host = new NodeHost();
  const child = await host.spawn("cat", [], { cwd: "/", stdin: "piped" });
  const output = Promise.all([new Response(child.stdout).text(), child.stderr.cancel()]);
  await host.stopProcesses({ graceMs: 100 });
  assert.deepEqual(await child.exited, { code: null, signal: "SIGTERM" });
  await output;
  assert.deepEqual(await gone([child.pid], 0), []);
});

Deno.test("NodeHost.appendFile() appends, creates unless told not to, and syncs", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    const file = `${dir}/log.jsonl`;
    await host.appendFile(file, "one\n", { sync: false });
    await host.appendFile(file, new TextEncoder().encode("two\n"), { sync: true });
    await host.appendFile(file, "", { sync: true, create: false });
    assert.equal(await Deno.readTextFile(file), "one\ntwo\n");
    await assert.rejects(
      host.appendFile(`${dir}/missing`, "x", { sync: false, create: false }),
      (error: unknown) => (error as { code?: string }).code === "ENOENT",
    );
    await assert.rejects(Deno.stat(`${dir}/missing`), Deno.errors.NotFound);
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.appendFileSync() writes before it returns; syncFile() flushes", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    const file = `${dir}/log`;
    host.appendFileSync(file, "one\n");
    host.appendFileSync(file, new TextEncoder().encode("two\n"), { create: false });
    assert.equal(await Deno.readTextFile(file), "one\ntwo\n");
    await host.syncFile(file);
    assert.throws(
      () => host.appendFileSync(`${dir}/missing`, "x", { create: false }),
      (error: unknown) => (error as { code?: string }).code === "ENOENT",
    );
    await assert.rejects(host.syncFile(`${dir}/missing`));
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.appendFile() from many concurrent writers never interleaves", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    const file = `${dir}/log`;
    const lines = Array.from({ length: 200 }, (_, n) => `${n}:${"x".repeat(n * 37 % 5000)}\n`);
    await Promise.all(lines.map((line) => host.appendFile(file, line, { sync: false })));
    const written = (await Deno.readTextFile(file)).split("\n").slice(0, -1).map((l) => `${l}\n`);
    assert.deepEqual(written.sort(), [...lines].sort());
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.createExclusive() creates once", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    const file = `${dir}/x.lock`;
    assert.equal(await host.createExclusive(file, "first", { sync: true }), true);
    assert.equal(await host.createExclusive(file, "second"), false);
    assert.equal(await Deno.readTextFile(file), "first");
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, n) => host.createExclusive(`${dir}/race`, `${n}`)),
    );
    assert.equal(results.filter(Boolean).length, 1);
    await assert.rejects(host.createExclusive(`${dir}/no/such/dir`, "x"));
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.createExclusive() and appendFile() write small data and large data (over 64 KiB, written off the main thread) whole, with and without sync", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    const large = "x".repeat(200 * 1024);
    for (const [name, data] of [["small", "a\n"], ["large", large]] as const) {
      for (const sync of [false, true]) {
        const file = `${dir}/${name}-${sync}`;
        assert.equal(await host.createExclusive(file, data, { sync }), true);
        assert.equal(await host.createExclusive(file, "again", { sync }), false);
        await host.appendFile(file, new TextEncoder().encode(data), { sync });
        await host.appendFile(file, data, { sync, create: false });
        assert.equal(await Deno.readTextFile(file), data.repeat(3), `${name}, sync ${sync}`);
        assert.equal((await Deno.stat(file)).mode! & 0o777, 0o644 & ~Deno.umask());
      }
    }
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.statSync() and realpathSync() say what stat() and realpath() say", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    await Deno.writeTextFile(`${dir}/file`, "12345");
    await Deno.symlink(`${dir}/file`, `${dir}/link`);
    await Deno.symlink(`${dir}/gone`, `${dir}/dangling`);
    const paths = [dir, `${dir}/file`, `${dir}/link`, `${dir}/dangling`, `${dir}/none`];
    // Through a file (ENOTDIR): does not exist, as for `stat`.
    paths.push(`${dir}/file/sub`, `${dir}/link/sub`);
    for (const path of paths) {
      assert.deepEqual(host.statSync(path), await host.stat(path), path);
    }
    assert.equal(host.realpathSync(`${dir}/link`), await host.realpath(`${dir}/link`));
    assert.equal(host.realpathSync(`${dir}/link`), `${dir}/file`);
    assert.throws(() => host.realpathSync(`${dir}/none`));
    await assert.rejects(host.realpath(`${dir}/none`));
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.linkExclusive(), touch() and removeIfSameFileSync(): a second name for a file, removed only while it is that file", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    const first = `${dir}/a.lock`;
    const second = `${dir}/b.lock`;
    await Deno.writeTextFile(first, "mine");
    await Deno.utime(first, 0, 0);
    assert.equal(await host.linkExclusive(first, second), true);
    assert.equal(await host.linkExclusive(first, second), false, "exists");
    await assert.rejects(host.linkExclusive(`${dir}/gone.lock`, `${dir}/c.lock`));
    await host.touch(second);
    assert.ok((await Deno.stat(first)).mtime!.getTime() > 0, "one file: both names touched");
    const info = await host.stat(first);
    assert.ok(info?.ino !== undefined && info.dev !== undefined);
    const identity = { dev: info.dev, ino: info.ino };
    assert.equal(host.removeIfSameFileSync(second, identity), true);
    assert.equal(await Deno.readTextFile(first), "mine", "the other name stays");
    // Another file at the same path is left alone.
    await Deno.writeTextFile(second, "mine");
    assert.equal(host.removeIfSameFileSync(second, identity), false);
    assert.equal(host.removeIfSameFileSync(`${dir}/no/such/x.lock`, identity), false);
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.removeIfContentSync() removes a file only when it says exactly what is expected", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    const file = `${dir}/x.lock`;
    await Deno.writeTextFile(file, "mine");
    assert.equal(host.removeIfContentSync(file, "min"), false);
    assert.equal(host.removeIfContentSync(file, "mine!"), false);
    assert.equal(await Deno.readTextFile(file), "mine");
    assert.equal(host.removeIfContentSync(file, "mine"), true);
    await assert.rejects(Deno.stat(file), Deno.errors.NotFound);
    assert.equal(host.removeIfContentSync(file, "mine"), false);
    assert.equal(host.removeIfContentSync(`${dir}/no/such/dir/x.lock`, "mine"), false);
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.rename(), truncate(), readFileRange() and syncDir()", async () => {
  const dir = await makeTempDir();
  try {
    const host = new NodeHost();
    await Deno.writeTextFile(`${dir}/a`, "0123456789");
    await Deno.writeTextFile(`${dir}/b`, "old");
    await host.rename(`${dir}/a`, `${dir}/b`);
    assert.equal(await Deno.readTextFile(`${dir}/b`), "0123456789");
    await assert.rejects(Deno.stat(`${dir}/a`), Deno.errors.NotFound);

    const text = async (start: number, end?: number): Promise<string> =>
      new TextDecoder().decode(await host.readFileRange(`${dir}/b`, start, end));
    assert.equal(await text(0, 3), "012");
    assert.equal(await text(7), "789");
    assert.equal(await text(8, 100), "89");
    assert.equal(await text(20), "");
    assert.equal(await text(4, 4), "");
    await assert.rejects(host.readFileRange(`${dir}/missing`, 0));

    await host.truncate(`${dir}/b`, 4, { sync: true });
    assert.equal(await Deno.readTextFile(`${dir}/b`), "0123");
    await host.syncDir(dir);
    await host.syncDir(`${dir}/missing`);
  } finally {
    await removeTempDir(dir);
  }
});

Deno.test("NodeHost.pid(), hostname() and isProcessAlive()", async () => {
  const host = new NodeHost();
  assert.equal(host.pid(), process.pid);
  assert.ok(host.hostname().length > 0);
  assert.equal(host.isProcessAlive(process.pid), true);
  for (const bad of [0, -1, 1.5, Number.NaN, 2 ** 60]) {
    assert.equal(host.isProcessAlive(bad), false);
  }

  const exited = await host.spawn("/bin/sh", ["-c", "exit 0"], { cwd: "/" });
  await drain(exited);
  await exited.exited;
  assert.equal(host.isProcessAlive(exited.pid), false);

  // A zombie: the shell's background child exits, but its parent (now `sleep`) never reaps it.
  const parent = await host.spawn("/bin/sh", ["-c", "true & echo $!; exec sleep 30"], {
    cwd: "/",
  });
  const { lines, rest } = await readLines(parent.stdout, 1);
  const zombie = Number(lines[0]);
  try {
    // Whether the child stays a zombie depends on who reaps it (the shell may, before its exec):
    // either way it must count as dead.
    // Only /proc tells a process's state (no event): poll it.
    let state = "";
    await pollUntil(async () => {
      try {
        const stat = await Deno.readTextFile(`/proc/${zombie}/stat`);
        state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
      } catch {
        state = "gone";
      }
      return state === "Z" || state === "gone";
    }, { what: "the child dead", timeoutMs: 4_000 }).catch(() => {});
    assert.ok(state === "Z" || state === "gone", `state ${state}`);
    if (state === "Z") process.kill(zombie, 0); // still in the process table
    assert.equal(host.isProcessAlive(zombie), false);
    assert.equal(host.isProcessAlive(parent.pid), true);
  } finally {
    parent.kill("SIGKILL");
    await Promise.all([parent.exited, rest, parent.stderr.cancel()]);
  }
});

Deno.test("NodeHost.mkdir() makes parents, accepts an existing directory, and fails where it cannot", async () => {
  await using dir = await tempDir("acp-harness-mkdir-");
  const host = new NodeHost();
  await host.mkdir(`${dir.path}/a/b/c/`);
  await host.mkdir(`${dir.path}/a/b/c`);
  assert.ok((await stat(`${dir.path}/a/b/c`)).isDirectory());
  await writeFile(`${dir.path}/file`, "x");
  await assert.rejects(host.mkdir(`${dir.path}/file`), { code: "EEXIST" });
  await assert.rejects(host.mkdir(`${dir.path}/file/sub`), { code: "ENOTDIR" });
  // Node.js 20's recursive mkdir never settles here; this one fails at once.
  await assert.rejects(host.mkdir("/proc/acp-harness-nope/sub"), { code: "ENOENT" });
});
