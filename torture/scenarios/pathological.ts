/**
 * Pathological tool inputs: a catastrophic regex, a huge file, a binary file, a deep directory
 * tree, many files, symlink loops, a FIFO, an exploding glob. While the tool works, another
 * request (`session/list`) must be answered without waiting for it; a cancel must end the turn.
 *
 * @module
 */
import { spawnSync } from "node:child_process";
import { mkdir, open, symlink, writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { random, writeScript } from "../driver.ts";

type Call = { name: string; arguments: Record<string, unknown> };

interface Case {
  readonly name: string;
  /** Builds the case's files in `cwd`. */
  setup(cwd: string, next: () => number): Promise<void>;
  readonly calls: readonly Call[];
  /** Cancel the turn once the probe is answered (the tool may run for long). */
  readonly cancel: boolean;
}

const BRANCHES = Array.from({ length: 22 }, () => "{a,b}").join("");

const CASES: readonly Case[] = [
  {
    name: "regex ^(a+)+$",
    async setup(cwd) {
      await writeFile(join(cwd, "evil.txt"), `${"a".repeat(28)}!\n`.repeat(3));
    },
    calls: [{ name: "search_text", arguments: { pattern: "^(a+)+$", path: "." } }],
    cancel: false,
  },
  {
    name: "regex, cancelled",
    async setup(cwd) {
      await writeFile(join(cwd, "evil.txt"), `${"a".repeat(26)}!\n`.repeat(3));
    },
    calls: [{ name: "search_text", arguments: { pattern: "^(a|a)+$", path: "." } }],
    cancel: true,
  },
  {
    name: "huge file",
    async setup(cwd) {
      const file = await open(join(cwd, "huge.txt"), "w");
      const line = "x".repeat(1023) + "\n";
      const chunk = line.repeat(1024);
      for (let n = 0; n < 24; n++) await file.write(chunk);
      await file.write("needle " + "y".repeat(4 * 1024 * 1024));
      await file.close();
    },
    calls: [
      { name: "read_file", arguments: { path: "huge.txt" } },
      { name: "read_file", arguments: { path: "huge.txt", offset: 24_000 } },
      { name: "search_text", arguments: { pattern: "needle", path: "." } },
      { name: "edit_file", arguments: { path: "huge.txt", old_text: "needle", new_text: "pin" } },
    ],
    cancel: false,
  },
  {
    name: "binary file",
    async setup(cwd, next) {
      const bytes = new Uint8Array(4 * 1024 * 1024).map(() => Math.floor(next() * 256));
      await writeFile(join(cwd, "blob.bin"), bytes);
    },
    calls: [
      { name: "read_file", arguments: { path: "blob.bin" } },
      { name: "search_text", arguments: { pattern: "\\x00|a.*b.*c", path: "." } },
      { name: "edit_file", arguments: { path: "blob.bin", old_text: "a", new_text: "b" } },
    ],
    cancel: false,
  },
  {
    name: "deep tree",
    async setup(cwd) {
      let dir = cwd;
      for (let depth = 0; depth < 400; depth++) dir = join(dir, "d");
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, "bottom.txt"), "found the bottom\n");
    },
    calls: [
      { name: "find_files", arguments: { pattern: "**/*.txt" } },
      { name: "search_text", arguments: { pattern: "bottom" } },
      { name: "find_files", arguments: { pattern: "**/**/**/**/**/**/**/**/bottom.txt" } },
    ],
    cancel: false,
  },
  {
    name: "many files + exploding glob",
    async setup(cwd) {
      for (let a = 0; a < 50; a++) {
        await mkdir(join(cwd, `dir${a}`), { recursive: true });
        await Promise.all(
          Array.from(
            { length: 100 },
            (_, b) => writeFile(join(cwd, `dir${a}`, `f${b}.txt`), `${a} ${b}\n`),
          ),
        );
      }
    },
    calls: [
      { name: "find_files", arguments: { pattern: "**" } },
      { name: "find_files", arguments: { pattern: BRANCHES } },
      { name: "search_text", arguments: { pattern: "49 99" } },
      { name: "list_directory", arguments: { path: "dir7" } },
    ],
    cancel: false,
  },
  {
    name: "symlink loops",
    async setup(cwd) {
      await mkdir(join(cwd, "loop"), { recursive: true });
      await symlink(".", join(cwd, "loop", "self"));
      await symlink("b", join(cwd, "a"));
      await symlink("a", join(cwd, "b"));
      await symlink("..", join(cwd, "loop", "up"));
    },
    calls: [
      { name: "find_files", arguments: { pattern: "**/*" } },
      { name: "search_text", arguments: { pattern: "x" } },
      { name: "read_file", arguments: { path: "a" } },
      { name: "list_directory", arguments: { path: "loop/self/self/self" } },
    ],
    cancel: false,
  },
  {
    name: "fifo",
    setup(cwd) {
      spawnSync("mkfifo", [join(cwd, "pipe")]);
      return Promise.resolve();
    },
    calls: [
      { name: "read_file", arguments: { path: "pipe" } },
      { name: "search_text", arguments: { pattern: "x" } },
    ],
    cancel: true,
  },
];

/** See the module doc. */
export const pathological: Scenario = {
  name: "pathological",
  description: "regexes, huge/binary files, deep trees, many files, loops, a FIFO",
  async run(context: ScenarioContext): Promise<void> {
    const rounds = context.pick(2, 1, 1);
    const next = random(context.seed + 3);
    for (let round = 0; round < rounds; round++) {
      for (const [index, item] of CASES.entries()) {
        await oneCase(context, item, `${round}-${index}`, next);
      }
    }
  },
};

async function oneCase(
  context: ScenarioContext,
  item: Case,
  key: string,
  next: () => number,
): Promise<void> {
  const dir = join(context.base, `case-${key}`);
  const cwd = join(dir, "ws");
  await mkdir(cwd, { recursive: true });
  await item.setup(cwd, next);
  // A case that cancels keeps its turn going after the tools (a slow last step), so that the cancel
  // always finds it running, however fast the tools were.
  const script = await writeScript(dir, "script.json", [
    { toolCalls: item.calls },
    item.cancel ? { delayMs: 60_000, text: "done" } : { text: "done" },
  ]);
  const server = context.start({
    dataDir: join(dir, "data"),
    cwd: dir,
    args: ["--mode", "auto", "--model", "scripted", "--script", script],
  });
  await server.initialize();
  const sessionId = await server.newSession(cwd);
  const prompt = server.promptRequest(sessionId, item.name);
  await server.write(prompt.frame);
  context.run();
  // Once a tool runs, ask for something else: it must not wait for the tool.
  const started = await server.waitFor(
    () => server.updates(sessionId).some((update) => update.status === "in_progress"),
    10_000,
  );
  if (started) {
    const probe = server.request("session/list", {});
    const sentAt = performance.now();
    await server.write(probe.frame);
    const answered = await server.response(probe.id, 60_000);
    const waited = performance.now() - sentAt;
    const at = server.responseIndex(probe.id);
    const finishedBefore = server.frames.slice(0, at === -1 ? undefined : at).some((frame) => {
      const update = (frame.params as { update?: Record<string, unknown> } | undefined)?.update;
      return frame.method === "session/update" &&
        (update?.status === "completed" || update?.status === "failed");
    });
    if (answered === undefined || (finishedBefore && waited > 1_000)) {
      context.fail(
        "other",
        "blocked",
        `${item.name}: session/list waited ${Math.round(waited)} ms for the tool`,
      );
    }
  }
  if (item.cancel) await server.write(server.notification("session/cancel", { sessionId }));
  let response = await server.response(prompt.id, item.cancel ? 5_000 : 30_000);
  if (response === undefined && !item.cancel) {
    context.fail("other", "hang", `${item.name}: the turn did not end within 30 s`);
    await server.write(server.notification("session/cancel", { sessionId }));
    response = await server.response(prompt.id, 5_000);
  }
  if (response === undefined) {
    if (!(await context.checkAnswers(server, item.name))) {
      server.kill("SIGKILL");
      await server.exited;
      return;
    }
    context.fail(
      "other",
      "cancel-ignored",
      `${item.name}: a cancel did not end the turn within 5 s`,
    );
  } else if (
    item.cancel && (response.result as { stopReason?: string })?.stopReason !== "cancelled"
  ) {
    context.fail(
      "other",
      "cancel-ignored",
      `${item.name}: cancelled turn answered ${JSON.stringify(response.result ?? response.error)}`,
    );
  }
  server.end();
  if (!(await server.exitWithin(5_000))) {
    context.fail("other", "slow-exit", `${item.name}: did not exit within 5 s of stdin EOF`);
    server.kill("SIGKILL");
    await server.exited;
  }
  context.checkCrash(server, item.name);
}
