/**
 * The selection: config option validation, changes and the updates they produce.
 *
 * @module
 */
import assert from "node:assert/strict";
import { ConfigValueError, SessionSelection, turnEffort } from "../../src/session/selection.ts";
import { fakeCatalog, GatedProvider, modelInfo } from "./_fakes.ts";

const thinker = modelInfo({
  id: "fake/thinker",
  reasoningEfforts: ["low", "high"],
  defaultReasoningEffort: "high",
});
const plain = modelInfo({ id: "fake/plain" });
const catalog = {
  ...fakeCatalog(new GatedProvider()),
  info: (id: string) => [thinker, plain].find((model) => model.id === id),
  list: () => [thinker, plain],
} as unknown as ReturnType<typeof fakeCatalog>;

Deno.test("SessionSelection.set() changes the mode and says so with both updates", () => {
  const selection = new SessionSelection({ model: plain.id, mode: "ask" }, catalog);
  const change = selection.set("mode", "read-only");
  assert.equal(selection.current.mode, "read-only");
  assert.deepEqual(change.updates.map((update) => update.sessionUpdate), [
    "config_option_update",
    "current_mode_update",
  ]);
  assert.deepEqual(selection.modes().currentModeId, "read-only");
  assert.deepEqual(selection.configEvent(), {
    type: "config",
    model: plain.id,
    mode: "read-only",
  });
});

Deno.test("SessionSelection.set() of the model resets the effort to the model's own", () => {
  const selection = new SessionSelection({ model: plain.id, mode: "auto" }, catalog);
  const change = selection.set("model", thinker.id);
  assert.deepEqual(selection.current, { model: thinker.id, mode: "auto", effort: "high" });
  assert.deepEqual(change.updates.map((update) => update.sessionUpdate), ["config_option_update"]);
  assert.ok(change.options.some((option) => option.id === "reasoning_effort"));
  selection.set("reasoning_effort", "low");
  assert.equal(selection.current.effort, "low");
  selection.set("model", plain.id);
  assert.deepEqual(selection.current, { model: plain.id, mode: "auto" });
  assert.equal(selection.currentModel(), plain);
});

Deno.test("SessionSelection.set() refuses unknown options and values, changing nothing", () => {
  const selection = new SessionSelection({ model: plain.id, mode: "ask" }, catalog);
  assert.throws(
    () => selection.set("colour", "red"),
    (error: unknown) =>
      error instanceof ConfigValueError &&
      error.message === 'configId: unknown config option "colour"; expected one of model, mode',
  );
  assert.throws(
    () => selection.set("mode", 3),
    (error: unknown) =>
      error instanceof ConfigValueError &&
      error.message === 'value: 3 is not a value of "mode"; expected one of ask, auto, read-only',
  );
  assert.throws(() => selection.set("reasoning_effort", "low"), ConfigValueError);
  assert.deepEqual(selection.current, { model: plain.id, mode: "ask" });
});

Deno.test("turnEffort() asks for an accepted effort, never the provider's default", () => {
  assert.equal(turnEffort({ model: thinker.id, mode: "ask" }, thinker), "high");
  assert.equal(turnEffort({ model: thinker.id, mode: "ask", effort: "low" }, thinker), "low");
  assert.equal(turnEffort({ model: thinker.id, mode: "ask", effort: "max" }, thinker), undefined);
  const noDefault = modelInfo({ reasoningEfforts: ["low"] });
  assert.equal(turnEffort({ model: "x", mode: "ask", effort: "default" }, noDefault), undefined);
  assert.equal(turnEffort({ model: "x", mode: "ask" }, plain), undefined);
});
