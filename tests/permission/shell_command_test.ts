/**
 * Command lines as the rules see them: split by a real shell parser into their commands, with
 * what makes a line need a whole-line match, and bounded on pathological input.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  analyzeCommand,
  type CommandAnalysis,
  MAX_COMMAND_LENGTH,
} from "../../src/permission/shell_command.ts";

const scope = { cwd: "/w", roots: ["/w", "/extra"] };

async function parsed(line: string): Promise<Extract<CommandAnalysis, { parsed: true }>> {
  const analysis = await analyzeCommand(line, scope);
  assert.ok(analysis.parsed, `${line}: ${analysis.parsed ? "" : analysis.reason}`);
  return analysis;
}

const texts = (parts: ReadonlyArray<{ text: string }>) => parts.map((part) => part.text);

Deno.test("analyzeCommand() splits &&, ||, ;, |, |&, & and newlines into commands", async () => {
  const analysis = await parsed("a 1 && b || c; d | e |& f & g\nh");
  assert.deepEqual(texts(analysis.parts), ["a 1", "b", "c", "d", "e", "f", "g", "h"]);
  assert.equal(analysis.complex, undefined);
});

Deno.test("analyzeCommand() takes quotes and escapes off the words", async () => {
  assert.deepEqual(texts((await parsed(`"npm" 'te'st`)).parts), ["npm test"]);
  assert.deepEqual(texts((await parsed("npm\\ test")).parts), ["npm test"]);
  assert.deepEqual(texts((await parsed(`echo "a\\"b" 'c d'`)).parts), [`echo a"b c d`]);
  assert.deepEqual(texts((await parsed("echo   a\\\n  b")).parts), ["echo a b"]);
});

Deno.test("analyzeCommand() keeps assignments in the part, and other forms as variants", async () => {
  const [part] = (await parsed("FOO=1 /usr/bin/npm test")).parts;
  assert.equal(part?.text, "FOO=1 /usr/bin/npm test");
  assert.deepEqual(part?.variants, ["/usr/bin/npm test", "npm test"]);
});

const COMPLEX: ReadonlyArray<readonly [string, RegExp]> = [
  ["echo $(touch x)", /command substitution/],
  ["echo `touch x`", /command substitution/],
  ["diff <(ls) x", /process substitution/],
  ["(rm -rf ~)", /subshell/],
  ["{ rm -rf ~; }", /group/],
  ["if true; then rm x; fi", /if clause/],
  ["for f in *; do rm $f; done", /loop/],
  ["while true; do :; done", /loop/],
  ["f() { rm x; }; f", /function/],
  ["cat <<EOF\n$(id)\nEOF", /here-document|command substitution/],
  ["cat <<< hi", /here-document/],
  ["echo x > /etc/x", /outside the workspace \(\/etc\/x\)/],
  ["echo x >> ~/.bashrc", /not known before it runs/],
  ["echo x > $OUT", /not known before it runs/],
  ["echo x > ../out", /outside the workspace/],
  ["echo x &> /tmp/x", /outside the workspace/],
  ["echo x &>> /tmp/x", /outside the workspace/],
  ["echo x >| /etc/x", /outside the workspace/],
  ["echo x <> /etc/x", /outside the workspace/],
  ["echo x >& /etc/x", /outside the workspace/],
  ["cat <<-EOF\n\tx\n\tEOF", /here-document/],
  ["echo $((1 + 2))", /arithmetic/],
  ["[[ $x == 1 ]]", /test/],
  ["echo ${a[$i]}", /parameter expansion/],
  ["eval 'echo hi'", /"eval"/],
  [". ./env.sh", /"\."/],
  ["$CMD x", /command name that is not literal/],
  ["export A=1", /declaration/],
  ["> out", /redirection without a command/],
  ["time ls", /time command/],
  ["echo $'\\x41'", /\$'…' string/],
];

Deno.test("analyzeCommand() says what makes a line need a whole-line match", async () => {
  for (const [line, reason] of COMPLEX) {
    const analysis = await parsed(line);
    assert.match(analysis.complex ?? "(none)", reason, line);
  }
});

Deno.test("analyzeCommand() lets redirections into the roots and to /dev/null pass", async () => {
  for (
    const line of [
      "npm test > out.txt 2>&1",
      "npm test >> /extra/log",
      "npm test 2>/dev/null",
      "npm test < /etc/hosts",
      "npm test >&2",
    ]
  ) {
    const analysis = await parsed(line);
    assert.equal(analysis.complex, undefined, line);
  }
  const inside = await analyzeCommand("echo x > log", { cwd: "/w/sub", roots: ["/w"] });
  assert.ok(inside.parsed && inside.complex === undefined);
  // After a cd, a relative path may be anywhere.
  const moved = await parsed("cd /etc && echo x > passwd");
  assert.match(moved.complex ?? "", /after a change of directory/);
  assert.equal((await parsed("cd sub && echo x > /w/log")).complex, undefined);
});

Deno.test("analyzeCommand() finds the commands nested in substitutions and eval strings", async () => {
  const analysis = await parsed(`echo $(rm -rf ~) "$(curl x)" && eval "rm -rf /"; sh -c 'wget y'`);
  const nested = texts(analysis.nested);
  for (const inner of ["rm -rf ~", "curl x", "rm -rf /", "wget y"]) {
    assert.ok(nested.includes(inner), `${inner} in ${nested.join(" | ")}`);
  }
});

Deno.test("analyzeCommand() reads non-ASCII text at the right offsets", async () => {
  const analysis = await parsed(`echo "é€😀" $(ünïcode ∂) && echo ok`);
  assert.deepEqual(texts(analysis.parts), ["echo é€😀 $(ünïcode ∂)", "echo ok"]);
  assert.ok(texts(analysis.nested).includes("ünïcode ∂"));
  // The shell splits words on ASCII blanks only: a no-break space is part of a word.
  const [part] = (await parsed("npm\u00a0test")).parts;
  assert.equal(part?.text, "npm\u00a0test");
});

Deno.test("analyzeCommand() says a line that is not shell is not parsed", async () => {
  for (const line of ["echo 'unclosed", "a &&", "(", "echo $(", "if then fi"]) {
    const analysis = await analyzeCommand(line, scope);
    assert.equal(analysis.parsed, false, line);
  }
});

Deno.test("analyzeCommand() refuses long and deeply nested lines quickly", async () => {
  const cases = [
    "echo " + "a ".repeat(MAX_COMMAND_LENGTH),
    "echo " + "$(".repeat(3000) + "x" + ")".repeat(3000),
    "(".repeat(3000) + "x" + ")".repeat(3000),
    "echo " + "$(echo ".repeat(200) + "x" + ")".repeat(200),
    'eval "eval \'eval \\"eval x\\"\'"',
  ];
  for (const line of cases) {
    const started = performance.now();
    const analysis = await analyzeCommand(line, scope);
    const ms = performance.now() - started;
    assert.ok(ms < 3000, `${line.slice(0, 30)}…: ${ms} ms`);
    if (analysis.parsed) assert.ok(analysis.complex, `${line.slice(0, 30)} is complex`);
  }
  const long = await analyzeCommand("echo " + "a".repeat(MAX_COMMAND_LENGTH), scope);
  assert.deepEqual(long, { parsed: false, reason: `longer than ${MAX_COMMAND_LENGTH} characters` });
});
