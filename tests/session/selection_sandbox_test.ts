/**
 * The selection's `sandbox` option: the server's level and tighter ones, looser refused, the
 * choice kept across a model change and recorded.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConfigValueError, sandboxLevel, SessionSelection } from "../../src/session/selection.ts";
import { CommandSandbox } from "../../src/sandbox/command_sandbox.ts";
import type { SandboxBackend } from "../../src/sandbox/sandbox.ts";
import { fakeCatalog, GatedProvider, modelInfo } from "./_fakes.ts";

const plain = modelInfo({ id: "fake/plain" });
const other = modelInfo({ id: "fake/other" });
const catalog = {
  ...fakeCatalog(new GatedProvider()),
  info: (id: string) => [plain, other].find((model) => model.id === id),
  list: () => [plain, other],
} as unknown as ReturnType<typeof fakeCatalog>;

const backend: SandboxBackend = {
  name: "fake",
  wrap: (request) => ({ program: "fake-sandbox", args: [request.program, ...request.args] }),
};

function optionOf(selection: SessionSelection): { currentValue: unknown; values: string[] } {
  const option = selection.configOptions().find((candidate) => candidate.id === "sandbox");
  assert.ok(option && option.type === "select");
  return {
    currentValue: option.currentValue,
    values: option.options.flatMap((entry) => "group" in entry ? entry.options : [entry]).map((
      entry,
    ) => entry.value),
  };
}

Deno.test("SessionSelection offers the server's sandbox level and tighter ones only", () => {
  const sandbox = new CommandSandbox({ level: "workspace-write", backend });
  const selection = new SessionSelection({ model: plain.id, mode: "auto" }, catalog, sandbox);
  assert.deepEqual(optionOf(selection), {
    currentValue: "workspace-write",
    values: ["workspace-write", "read-only"],
  });
  assert.throws(
    () => selection.set("sandbox", "off"),
    (error: unknown) =>
      error instanceof ConfigValueError &&
      /^value: sandbox "off" is looser than the server's sandbox "workspace-write"; expected one of workspace-write, read-only$/
        .test(error.message),
  );
  selection.set("sandbox", "read-only");
  assert.equal(optionOf(selection).currentValue, "read-only");
  selection.set("model", other.id);
  assert.equal(selection.current.sandbox, "read-only", "kept across a model change");
  assert.deepEqual(selection.configEvent(), {
    type: "config",
    model: other.id,
    mode: "auto",
    sandbox: "read-only",
  });
});

Deno.test("SessionSelection without a sandbox backend offers off only; without a sandbox no option", () => {
  const off = new CommandSandbox({ level: "off" });
  const selection = new SessionSelection({ model: plain.id, mode: "ask" }, catalog, off);
  assert.deepEqual(optionOf(selection), { currentValue: "off", values: ["off"] });
  assert.throws(() => selection.set("sandbox", "read-only"), /cannot be set up here/);
  const bare = new SessionSelection({ model: plain.id, mode: "ask" }, catalog);
  assert.equal(bare.configOptions().some((option) => option.id === "sandbox"), false);
});

Deno.test("sandboxLevel() raises a recorded level looser than the server's to the server's", () => {
  const strict = new CommandSandbox({ level: "read-only", backend });
  assert.equal(sandboxLevel({ model: "m", mode: "ask", sandbox: "off" }, strict), "read-only");
  assert.equal(sandboxLevel({ model: "m", mode: "ask" }, strict), "read-only");
  const open = new CommandSandbox({ level: "off", backend });
  assert.equal(sandboxLevel({ model: "m", mode: "ask", sandbox: "read-only" }, open), "read-only");
  // A tighter level that cannot be set up stays: its commands fail rather than run unconfined.
  const none = new CommandSandbox({ level: "off" });
  assert.equal(sandboxLevel({ model: "m", mode: "ask", sandbox: "read-only" }, none), "read-only");
  assert.throws(
    () => none.wrap("read-only", { roots: [], cwd: "/", program: "true", args: [] }),
    /no backend/,
  );
});
