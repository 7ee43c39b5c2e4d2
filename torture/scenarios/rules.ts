/**
 * Permission-rule bypasses: command lines that try to ride a harmless allow rule, or to slip a
 * denied command past a deny rule, each trying to create a `pwned-<n>` file (in the workspace, or
 * outside it by a redirection). Two setups: deny by default (`--mode read-only` with
 * `--allow 'run_command(echo *)'` and `--allow 'write_file(allowed/**)'`), where nothing but
 * `echo` and writes under `allowed/` may run, and deny rules beating `--mode auto`
 * (`--deny 'run_command(touch *)'`, `--deny write_file`). Any `pwned-*` file afterwards is an
 * escape; the allowed controls must still run (else the scenario would pass by refusing all).
 *
 * @module
 */
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import type { Scenario, ScenarioContext } from "../context.ts";
import { writeScript } from "../driver.ts";

type Call = { id: string; name: string; arguments: Record<string, unknown> };

/** Lines that try to run `payload` on the back of `echo` (deny-by-default setup). */
function ridingEcho(touch: (n: number) => string, outside: (n: number) => string): string[] {
  let n = 0;
  const t = (): string => touch(n++);
  const o = (): string => outside(n++);
  return [
    `echo ok && ${t()}`,
    `echo ok || ${t()}`,
    `false && echo || ${t()}`,
    `echo ok; ${t()}`,
    `echo ok;${t()}`,
    `echo ok | ${t()}`,
    `echo ok |& ${t()}`,
    `echo ok & ${t()}`,
    `echo ok\n${t()}`,
    `echo ok\r\n${t()}`,
    `echo $(${t()})`,
    `echo "$(${t()})"`,
    `echo \`${t()}\``,
    `echo <(${t()})`,
    `echo >(${t()})`,
    `echo \${x:-$(${t()})}`,
    `echo $((0)) $(${t()})`,
    `(${t()})`,
    `{ ${t()}; }`,
    `if true; then ${t()}; fi`,
    `for i in 1; do ${t()}; done`,
    `f() { ${t()}; }; f`,
    `eval '${t()}'`,
    `echo ok && eval "${t()}"`,
    `sh -c '${t()}'`,
    `echo ok; sh -c "${t()}"`,
    `"${t()}"`,
    `FOO=1 ${t()}`,
    `echo ok\u00a0&& ${t()}`,
    `echo ok\u2028; ${t()}`,
    `echo ok > ${o()}`,
    `echo ok >> ${o()}`,
    `echo ok 2> ${o()}`,
    `echo ok &> ${o()}`,
    `echo ok >| ${o()}`,
    `cd / && echo ok > ${o().slice(1)}`,
    `echo ok <<EOF\n$(${t()})\nEOF`,
    `echo ${"a ".repeat(5000)}; ${t()}`,
    `echo ${"$(".repeat(300)}${t()}${")".repeat(300)}`,
    `echo 'unclosed; ${t()}`,
  ];
}

/** Lines that try to run `touch` past `--deny 'run_command(touch *)'` (auto mode). */
function pastTouchDeny(touch: (n: number) => string): string[] {
  let n = 0;
  const t = (): string => touch(n++);
  return [
    t(),
    `"touch" ${t().slice(6)}`,
    `'touch' ${t().slice(6)}`,
    `t\\ouch ${t().slice(6)}`,
    `/usr/bin/touch ${t().slice(6)}`,
    `FOO=1 ${t()}`,
    `echo ok && ${t()}`,
    `echo ok; ${t()}`,
    `echo ok | ${t()}`,
    `echo $(${t()})`,
    `echo \`${t()}\``,
    `(${t()})`,
    `eval '${t()}'`,
    `eval "echo ok; ${t()}"`,
    `sh -c '${t()}'`,
    `bash -c "${t()}"`,
    `if true; then ${t()}; fi`,
    `f() { ${t()}; }; f`,
    `${t()} 'unclosed`,
  ];
}

async function pwned(dirs: readonly string[]): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string): Promise<void> => {
    for (const entry of await readdir(at, { withFileTypes: true }).catch(() => [])) {
      const path = join(at, entry.name);
      if (entry.name.startsWith("pwned-")) found.push(path);
      if (entry.isDirectory()) await walk(path);
    }
  };
  for (const dir of dirs) await walk(dir);
  return found;
}

interface Setup {
  readonly name: string;
  readonly flags: readonly string[];
  /** The attempts and the controls (calls that must complete), by call id. */
  readonly calls: (cwd: string, outside: string) => { attempts: Call[]; controls: Call[] };
}

const SETUPS: readonly Setup[] = [
  {
    name: "deny by default",
    flags: [
      ...["--mode", "read-only", "--allow", "run_command(echo *)"],
      ...["--allow", "write_file(allowed/**)"],
    ],
    calls: (cwd, outside) => {
      const lines = ridingEcho((n) => `touch pwned-${n}`, (n) => `${outside}/pwned-${n}`);
      const attempts: Call[] = lines.map((command, n) => ({
        id: `a${n}`,
        name: "run_command",
        arguments: { command },
      }));
      attempts.push(
        { id: "w1", name: "write_file", arguments: { path: "pwned-w1", content: "x" } },
        { id: "w2", name: "write_file", arguments: { path: "allowed/../pwned-w2", content: "x" } },
        { id: "w3", name: "write_file", arguments: { path: `${outside}/pwned-w3`, content: "x" } },
      );
      const controls: Call[] = [
        { id: "c1", name: "run_command", arguments: { command: "echo ok" } },
        { id: "c2", name: "run_command", arguments: { command: "echo ok > allowed/log 2>&1" } },
        { id: "c3", name: "write_file", arguments: { path: `${cwd}/allowed/a.txt`, content: "x" } },
      ];
      return { attempts, controls };
    },
  },
  {
    name: "deny beats auto",
    flags: ["--mode", "auto", "--deny", "run_command(touch *)", "--deny", "write_file"],
    calls: () => {
      const lines = pastTouchDeny((n) => `touch pwned-${n}`);
      const attempts: Call[] = lines.map((command, n) => ({
        id: `d${n}`,
        name: "run_command",
        arguments: { command },
      }));
      attempts.push({ id: "w1", name: "write_file", arguments: { path: "pwned-w", content: "x" } });
      const controls: Call[] = [
        { id: "c1", name: "run_command", arguments: { command: "echo ok && ls" } },
      ];
      return { attempts, controls };
    },
  },
];

async function runSetup(context: ScenarioContext, setup: Setup, index: number): Promise<void> {
  const rounds = context.pick(4, 2, 1);
  const base = join(context.base, `setup-${index}`);
  const outside = join(base, "outside");
  const cwd = join(base, "ws");
  await mkdir(outside, { recursive: true });
  await mkdir(join(cwd, "allowed"), { recursive: true });
  const { attempts, controls } = setup.calls(cwd, outside);
  const all = [...controls, ...attempts];
  const steps = [];
  for (let at = 0; at < all.length; at += 8) steps.push({ toolCalls: all.slice(at, at + 8) });
  steps.push({ text: "done" });
  // Each session starts the script afresh: every round is one session running all of it.
  const script = await writeScript(base, "script.json", steps);
  const server = context.start({
    dataDir: join(base, "data"),
    cwd: base,
    args: ["--model", "scripted", "--script", script, "--max-steps", "100", ...setup.flags],
  });
  let asked = 0;
  server.answer = (frame) => {
    if (frame.method !== "session/request_permission") return undefined;
    asked++;
    return { result: { outcome: { outcome: "selected", optionId: "reject_once" } } };
  };
  await server.initialize();
  for (let round = 0; round < rounds; round++) {
    const sessionId = await server.newSession(cwd);
    const from = server.frames.length;
    const prompt = server.promptRequest(sessionId, "get past the rules");
    await server.write(prompt.frame);
    const response = await server.response(prompt.id, 120_000);
    context.run(attempts.length);
    if (response === undefined) {
      if (!(await context.checkAnswers(server, `${setup.name} round ${round}`))) return;
      context.fail("other", "hang", `${setup.name} round ${round}: the turn did not end in 120 s`);
    }
    const status = new Map<string, string>();
    for (const update of server.updates(sessionId, from)) {
      if (update.sessionUpdate === "tool_call_update" && update.status !== "in_progress") {
        status.set(String(update.toolCallId), String(update.status));
      }
    }
    for (const control of controls) {
      if (status.get(control.id) === "completed") continue;
      context.fail(
        "other",
        "control refused",
        `${setup.name}: ${JSON.stringify(control.arguments)} ended ${status.get(control.id)}`,
      );
    }
    const found = await pwned([cwd, outside]);
    if (found.length > 0) {
      context.fail(
        "escapes",
        setup.name,
        `round ${round}: ${found.map((path) => path.slice(base.length)).join(", ")}`,
        found.length,
      );
      await Promise.all(found.map((path) => rm(path, { recursive: true, force: true })));
    }
    if (asked > 0) {
      context.fail("other", "asked", `${setup.name}: ${asked} permission requests (none expected)`);
      asked = 0;
    }
  }
  await server.stop();
}

/** See the module doc. */
export const rules: Scenario = {
  name: "rules",
  description: "permission-rule bypasses: compound lines, substitutions, redirections, quoting",
  async run(context: ScenarioContext): Promise<void> {
    for (const [index, setup] of SETUPS.entries()) await runSetup(context, setup, index);
  },
};
