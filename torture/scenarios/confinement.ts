/**
 * Confinement escapes: every tool tries to read, list, search, write, edit or run outside the
 * session's roots by `..`, absolute paths, symlinks (to a file, to a directory, dangling, chained,
 * relative), `/proc/self/root` and `/proc/self/cwd`. Outside lies a canary whose content and file
 * name carry a secret: the secret in anything the client receives is a read escape; any change
 * outside is a write escape.
 *
 * @module
 */
import { mkdir, readdir, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { join, relative } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { writeScript } from "../driver.ts";

type Call = { name: string; arguments: Record<string, unknown> };

/** The escape attempts; `cwd` is the session cwd, `outside` the canary directory. */
export function attempts(outside: string, up: string): Call[] {
  const o = (path: string): string => `${up}/outside/${path}`;
  const paths = [
    o("canary.txt"),
    `${outside}/canary.txt`,
    `/${outside}//canary.txt`,
    "link_file",
    "link_chain",
    "link_dir/canary.txt",
    "link_rel/canary.txt",
    `sub/../${o("canary.txt")}`,
    `./${o("canary.txt")}`,
    `/proc/self/root${outside}/canary.txt`,
    `/proc/self/cwd/outside/canary.txt`,
    `file://${outside}/canary.txt`,
    `${o("canary.txt")}\u0000`,
    `link_dir/../outside/canary.txt`,
  ];
  const dirs = [
    up + "/outside",
    outside,
    "link_dir",
    "link_rel",
    `/proc/self/root${outside}`,
    "/proc/self/cwd/outside",
  ];
  const writes = [
    o("w-dotdot.txt"),
    `${outside}/w-absolute.txt`,
    "link_dir/w-link-dir.txt",
    "link_rel/w-link-rel.txt",
    "dangling",
    "link_file",
    `/proc/self/root${outside}/w-proc.txt`,
    `sub/../${o("w-sub.txt")}`,
    "link_dir/new/deeper/w-mkdir.txt",
  ];
  return [
    ...paths.map((path) => ({ name: "read_file", arguments: { path } })),
    ...dirs.map((path) => ({ name: "list_directory", arguments: { path } })),
    ...dirs.map((path) => ({ name: "find_files", arguments: { pattern: "**/*", path } })),
    { name: "find_files", arguments: { pattern: `${up}/outside/*` } },
    { name: "find_files", arguments: { pattern: "**/*" } },
    ...dirs.map((path) => ({ name: "search_text", arguments: { pattern: "CANARY", path } })),
    { name: "search_text", arguments: { pattern: "CANARY" } },
    { name: "search_text", arguments: { pattern: "CANARY", path: "link_file" } },
    { name: "search_text", arguments: { pattern: "CANARY", include: `${up}/outside/*` } },
    ...writes.map((path) => ({ name: "write_file", arguments: { path, content: "ESCAPED" } })),
    ...["link_file", `${outside}/canary.txt`, o("canary.txt"), "link_dir/canary.txt"].map((
      path,
    ) => ({ name: "edit_file", arguments: { path, old_text: "CANARY", new_text: "PWNED" } })),
    ...[up + "/outside", outside, "link_dir", "link_rel"].map((cwd) => ({
      name: "run_command",
      arguments: { command: "touch escaped-by-cwd.txt", cwd },
    })),
  ];
}

async function snapshot(dir: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true })) {
      const path = join(at, entry.name);
      if (entry.isDirectory()) {
        files.set(relative(dir, path) + "/", "");
        await walk(path);
      } else files.set(relative(dir, path), await readFile(path, "utf8").catch(() => "?"));
    }
  };
  await walk(dir);
  return files;
}

/** See the module doc. */
export const confinement: Scenario = {
  name: "confinement",
  description: "read/list/find/search/write/edit/run outside the roots by 54 routes",
  async run(context: ScenarioContext): Promise<void> {
    const rounds = context.pick(10, 2, 1);
    const secret = crypto.randomUUID();
    const outside = join(context.base, "outside");
    const ws = join(context.base, "ws");
    await mkdir(join(outside, "dir"), { recursive: true });
    const seed = async (): Promise<void> => {
      await rm(outside, { recursive: true, force: true, maxRetries: 10, retryDelay: 50 });
      await mkdir(join(outside, "dir"), { recursive: true });
      await writeFile(join(outside, "canary.txt"), `CANARY ${secret}\n`);
      await writeFile(join(outside, `secret-${secret}.txt`), "CANARY name\n");
      await writeFile(join(outside, "dir", "inner.txt"), `CANARY ${secret} inner\n`);
    };
    await seed();
    const before = await snapshot(outside);
    // Session cwds are ws/<n>: "../.." leads to the base, where "outside" lives.
    const calls = attempts(outside, "../..");
    const steps = [];
    for (let at = 0; at < calls.length; at += 4) steps.push({ toolCalls: calls.slice(at, at + 4) });
    steps.push({ text: "done" });
    const script = await writeScript(context.base, "script.json", steps);
    const server = context.start({
      dataDir: join(context.base, "data"),
      cwd: context.base,
      args: ["--mode", "auto", "--model", "scripted", "--script", script, "--max-steps", "100"],
    });
    await server.initialize();
    for (let round = 0; round < rounds; round++) {
      const cwd = join(ws, String(round));
      await mkdir(join(cwd, "sub"), { recursive: true });
      await symlink(join(outside, "canary.txt"), join(cwd, "link_file"));
      await symlink(join(cwd, "link_file"), join(cwd, "link_chain"));
      await symlink(outside, join(cwd, "link_dir"));
      await symlink("../../outside", join(cwd, "link_rel"));
      await symlink(join(outside, "created-by-dangling.txt"), join(cwd, "dangling"));
      const sessionId = await server.newSession(cwd);
      const from = server.frames.length;
      const prompt = server.promptRequest(sessionId, "escape");
      await server.write(prompt.frame);
      const response = await server.response(prompt.id, 60_000);
      context.run(calls.length);
      if (response === undefined) {
        if (!(await context.checkAnswers(server, `round ${round}`))) return;
        context.fail("other", "hang", `round ${round}: the turn did not end within 60 s`);
      }
      // Reads: the secret in any update of this turn, by tool call.
      const inputs = new Map<string, string>();
      const leaked = new Set<string>();
      for (const update of server.updates(sessionId, from)) {
        const id = String(update.toolCallId ?? "");
        if (update.sessionUpdate === "tool_call") {
          inputs.set(id, `${String(update.title)} ${JSON.stringify(update.rawInput)}`);
        }
        if (JSON.stringify(update).includes(secret)) leaked.add(id);
      }
      for (const id of leaked) {
        context.fail(
          "escapes",
          "read",
          `round ${round}: ${inputs.get(id) ?? id} revealed the canary`,
        );
      }
      // Writes: anything changed outside.
      const after = await snapshot(outside);
      const changed = [...new Set([...before.keys(), ...after.keys()])].filter((key) =>
        before.get(key) !== after.get(key)
      );
      if (changed.length > 0) {
        context.fail(
          "escapes",
          "write",
          `round ${round}: changed outside: ${changed.join(", ")}`,
          changed.length,
        );
        await seed();
      }
    }
  },
};
