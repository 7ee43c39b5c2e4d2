import assert from "node:assert/strict";
import {
  checkContent,
  type ElicitationSchema,
  schemaProblem,
} from "../../src/tools/elicitation.ts";

const FORM: ElicitationSchema = {
  type: "object",
  properties: {
    name: { type: "string" },
    size: { type: "string", enum: ["S", "M", "L"] },
    hero: { type: "string", oneOf: [{ const: "h1", title: "Superman" }] },
    count: { type: "integer" },
    ratio: { type: "number" },
    agree: { type: "boolean" },
    tags: { type: "array", items: { type: "string", enum: ["a", "b"] } },
    fish: { type: "array", items: { anyOf: [{ const: "f1", title: "Tuna" }] } },
    notes: { type: "array", items: { type: "string" } },
    custom: { type: "_color" },
  },
  required: ["name"],
};

Deno.test("checkContent() keeps a well-formed answer and drops fields the form has not", () => {
  const content = {
    name: "Ada",
    size: "M",
    hero: "h1",
    count: 3,
    ratio: 0.5,
    agree: false,
    tags: ["a", "b"],
    fish: ["f1"],
    notes: ["anything"],
    custom: "#fff",
    unknown: "dropped",
  };
  const { unknown: _dropped, ...kept } = content;
  assert.deepEqual(checkContent(FORM, content), { content: kept });
  assert.deepEqual(checkContent(FORM, { name: "Ada", size: null }), { content: { name: "Ada" } });
  assert.deepEqual(checkContent({ type: "object", properties: {} }, undefined), { content: {} });
});

Deno.test("checkContent() names the first field that does not fit", () => {
  const cases: ReadonlyArray<readonly [unknown, string]> = [
    ["text", "content: expected an object"],
    [["Ada"], "content: expected an object"],
    [{}, "content.name: required"],
    [undefined, "content.name: required"],
    [{ name: 1 }, "content.name: expected a string"],
    [{ name: "x", size: "XL" }, 'content.size: expected one of "S", "M", "L"'],
    [{ name: "x", hero: "h2" }, 'content.hero: expected one of "h1"'],
    [{ name: "x", count: 1.5 }, "content.count: expected an integer"],
    [{ name: "x", ratio: "1" }, "content.ratio: expected a number"],
    [{ name: "x", agree: "yes" }, "content.agree: expected a boolean"],
    [{ name: "x", tags: "a" }, "content.tags: expected an array of strings"],
    [{ name: "x", tags: [1] }, "content.tags: expected an array of strings"],
    [{ name: "x", tags: ["c"] }, 'content.tags: expected items among "a", "b"'],
    [{ name: "x", fish: ["f2"] }, 'content.fish: expected items among "f1"'],
    [
      { name: "x", custom: { nested: true } },
      "content.custom: expected a string, number, boolean or strings",
    ],
  ];
  for (const [content, problem] of cases) {
    assert.deepEqual(checkContent(FORM, content), { problem }, JSON.stringify(content));
  }
});

Deno.test("schemaProblem() takes flat object forms only", () => {
  assert.equal(schemaProblem(FORM), undefined);
  assert.equal(schemaProblem({ properties: {} }), undefined);
  assert.equal(schemaProblem(null), "requestedSchema: expected an object");
  assert.equal(schemaProblem({ type: "array" }), 'requestedSchema.type: expected "object"');
  assert.equal(
    schemaProblem({ type: "object", properties: [] }),
    "requestedSchema.properties: expected an object",
  );
  assert.equal(
    schemaProblem({ type: "object", properties: { a: { title: "no type" } } }),
    "requestedSchema.properties.a: expected an object with a type",
  );
  assert.equal(
    schemaProblem({ type: "object", properties: {}, required: "a" }),
    "requestedSchema.required: expected an array of field names",
  );
  const many = Object.fromEntries(
    Array.from({ length: 101 }, (_, i) => [`f${i}`, { type: "string" }]),
  );
  assert.equal(
    schemaProblem({ type: "object", properties: many }),
    "requestedSchema.properties: at most 100 fields (got 101)",
  );
});
