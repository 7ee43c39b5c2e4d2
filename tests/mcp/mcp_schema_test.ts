import assert from "node:assert/strict";
import { modelInputSchema } from "../../src/mcp/mcp_schema.ts";

const PERMISSIVE = {
  type: "object",
  properties: {},
  description: "The input schema was too large to show; see the tool's description.",
};

/** How many nested objects lead down from `value` along `key`. */
function depthAlong(value: unknown, key: string): number {
  let depth = 0;
  let node = value;
  while (typeof node === "object" && node !== null && key in node) {
    node = (node as Record<string, unknown>)[key];
    depth++;
  }
  return depth;
}

Deno.test("modelInputSchema() inlines $defs and definitions refs and drops $schema, $id and the tables", () => {
  const schema = modelInputSchema({
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "urn:tool",
    type: "object",
    properties: {
      a: { $ref: "#/$defs/point" },
      b: { $ref: "#/definitions/name" },
      list: { type: "array", items: { $ref: "#/$defs/point" } },
    },
    $defs: {
      point: { $id: "urn:point", type: "object", properties: { x: { type: "number" } } },
    },
    definitions: { name: { type: "string", minLength: 1 } },
  });
  const point = { type: "object", properties: { x: { type: "number" } } };
  assert.deepEqual(schema, {
    type: "object",
    properties: {
      a: point,
      b: { type: "string", minLength: 1 },
      list: { type: "array", items: point },
    },
  });
});

Deno.test("modelInputSchema() resolves refs inside definitions, and a $ref at the top", () => {
  const schema = modelInputSchema({
    $ref: "#/$defs/args",
    $defs: {
      args: { type: "object", properties: { at: { $ref: "#/$defs/when" } }, required: ["at"] },
      when: { type: "string", format: "date-time" },
    },
  });
  assert.deepEqual(schema, {
    type: "object",
    properties: { at: { type: "string", format: "date-time" } },
    required: ["at"],
  });
});

Deno.test("modelInputSchema() keeps keywords beside a $ref over the target's", () => {
  const schema = modelInputSchema({
    type: "object",
    properties: {
      where: { $ref: "#/$defs/point", description: "Where to go", default: { x: 0 } },
    },
    $defs: {
      point: { type: "object", description: "A point", properties: { x: { type: "number" } } },
    },
  });
  assert.deepEqual(schema.properties, {
    where: {
      type: "object",
      description: "Where to go",
      properties: { x: { type: "number" } },
      default: { x: 0 },
    },
  });
});

Deno.test("modelInputSchema() cuts cyclic refs to {} after a bounded number of expansions", () => {
  const schema = modelInputSchema({
    type: "object",
    properties: { head: { $ref: "#/$defs/node" }, self: { $ref: "#/$defs/loop" } },
    $defs: {
      node: {
        type: "object",
        properties: { value: { type: "string" }, next: { $ref: "#/$defs/node" } },
      },
      loop: { $ref: "#/$defs/loop" },
    },
  });
  const properties = schema.properties as Record<string, unknown>;
  // A self-reference with nothing else resolves to nothing: {}.
  assert.deepEqual(properties.self, {});
  // The list is unrolled a few times, then ends in {}.
  let node = properties.head as Record<string, unknown>;
  let levels = 0;
  while (Object.keys(node).length > 0) {
    assert.equal(node.type, "object");
    node = (node.properties as Record<string, Record<string, unknown>>).next!;
    levels++;
    assert.ok(levels < 20, "the cycle is cut");
  }
  assert.ok(levels >= 2, `unrolled ${levels} times`);
  assert.deepEqual(node, {});
});

Deno.test("modelInputSchema() makes unknown and non-local refs {}", () => {
  const schema = modelInputSchema({
    type: "object",
    properties: {
      missing: { $ref: "#/$defs/nope" },
      remote: { $ref: "https://example.com/schema.json" },
      pointer: { $ref: "#/properties/missing" },
      described: { $ref: "#/$defs/nope", description: "Kept" },
    },
    $defs: { other: { type: "string" } },
  });
  assert.deepEqual(schema.properties, {
    missing: {},
    remote: {},
    pointer: {},
    described: {},
  });
});

Deno.test("modelInputSchema() treats refs named like Object.prototype members as unknown", () => {
  // The defs table is keyed by the ref text: a ref such as "toString" or "__proto__" must not
  // find an inherited member of a plain object.
  const schema = modelInputSchema({
    type: "object",
    properties: {
      a: { $ref: "toString" },
      b: { $ref: "constructor" },
      c: { $ref: "__proto__" },
      d: { $ref: "hasOwnProperty", description: "Like any unknown ref" },
    },
  });
  assert.deepEqual(schema.properties, { a: {}, b: {}, c: {}, d: {} });
  // At the top, such a ref must not turn the schema into the "too large" one.
  assert.deepEqual(modelInputSchema({ $ref: "toString" }), { type: "object", properties: {} });
});

Deno.test("modelInputSchema() cuts schemas nested deeper than the limit", () => {
  let deep: Record<string, unknown> = { type: "string" };
  for (let level = 0; level < 100; level++) {
    deep = { type: "object", properties: { child: deep } };
  }
  const schema = modelInputSchema(deep);
  // Two levels (`properties`, `child`) per step; the cut is at depth 32.
  const steps = depthAlong(schema, "properties");
  assert.ok(steps > 0 && steps <= 32, `depth ${steps}`);
  // Very deep input must not exhaust the stack either.
  let deeper: unknown = {};
  for (let level = 0; level < 100_000; level++) deeper = { not: deeper };
  assert.deepEqual(modelInputSchema({ properties: { x: deeper } }).type, "object");
  let array: unknown = [];
  for (let level = 0; level < 100_000; level++) array = [array];
  assert.equal(modelInputSchema({ properties: { x: { enum: array } } }).type, "object");
});

Deno.test("modelInputSchema() turns a schema over the node budget into a permissive object", () => {
  const properties: Record<string, unknown> = {};
  for (let index = 0; index < 25_000; index++) properties[`p${index}`] = { type: "string" };
  assert.deepEqual(modelInputSchema({ type: "object", properties }), PERMISSIVE);
});

Deno.test("modelInputSchema() bounds exponential $ref fan-out by the node budget", () => {
  // Each definition refers to the next ten times: 10^8 nodes if fully expanded.
  const $defs: Record<string, unknown> = {};
  for (let level = 0; level < 9; level++) {
    $defs[`d${level}`] = {
      type: "object",
      properties: Object.fromEntries(
        Array.from({ length: 10 }, (_, index) => [`k${index}`, { $ref: `#/$defs/d${level + 1}` }]),
      ),
    };
  }
  $defs.d9 = { type: "string" };
  const started = performance.now();
  const schema = modelInputSchema({
    type: "object",
    properties: { x: { $ref: "#/$defs/d0" } },
    $defs,
  });
  assert.deepEqual(schema, PERMISSIVE);
  assert.ok(performance.now() - started < 2_000, "bounded work");
});

Deno.test("modelInputSchema() drops top-level anyOf/oneOf/allOf/not but keeps them deeper", () => {
  const nested = { anyOf: [{ type: "string" }, { type: "integer" }] };
  const schema = modelInputSchema({
    type: "object",
    properties: { id: nested },
    anyOf: [{ required: ["id"] }],
    oneOf: [{ required: ["id"] }],
    allOf: [{ required: ["id"] }],
    not: { required: ["x"] },
    required: ["id"],
  });
  assert.deepEqual(schema, { type: "object", properties: { id: nested }, required: ["id"] });
});

Deno.test("modelInputSchema() forces the top type to object and adds properties", () => {
  assert.deepEqual(modelInputSchema({}), { type: "object", properties: {} });
  assert.deepEqual(modelInputSchema({ type: ["object", "null"] }), {
    type: "object",
    properties: {},
  });
  assert.deepEqual(modelInputSchema({ type: "string", properties: [] }), {
    type: "object",
    properties: {},
  });
  assert.deepEqual(
    modelInputSchema({ oneOf: [{ type: "object", properties: { a: { type: "string" } } }] }),
    { type: "object", properties: {} },
  );
});

Deno.test("modelInputSchema() gives an empty object schema for non-object input", () => {
  for (const input of [undefined, null, true, 0, "object", [], [{ type: "object" }]]) {
    assert.deepEqual(modelInputSchema(input), { type: "object", properties: {} }, String(input));
  }
});

Deno.test("modelInputSchema() keeps __proto__ as an own property name and pollutes nothing", () => {
  const input = JSON.parse(
    '{"type":"object","properties":{"__proto__":{"type":"string","polluted":true},' +
      '"p":{"$ref":"#/$defs/__proto__","__proto__":{"polluted":true}}},' +
      '"$defs":{"__proto__":{"type":"number"}},"__proto__":{"polluted":true}}',
  );
  const schema = modelInputSchema(input);
  const properties = schema.properties as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(schema), Object.prototype);
  assert.equal(Object.getPrototypeOf(properties), Object.prototype);
  assert.ok(Object.hasOwn(schema, "__proto__"));
  assert.ok(Object.hasOwn(properties, "__proto__"));
  assert.deepEqual(Object.getOwnPropertyDescriptor(properties, "__proto__")?.value, {
    type: "string",
    polluted: true,
  });
  const p = properties.p as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(p), Object.prototype);
  assert.equal(p.type, "number");
  assert.ok(Object.hasOwn(p, "__proto__"));
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal((Object.prototype as Record<string, unknown>).polluted, undefined);
  // It survives a JSON round trip as the property it is.
  assert.ok(JSON.stringify(schema).includes('"__proto__":{"type":"string","polluted":true}'));
});

Deno.test("modelInputSchema() makes non-finite numbers null", () => {
  const schema = modelInputSchema({
    type: "object",
    properties: {
      n: { type: "number", minimum: Number.NEGATIVE_INFINITY, maximum: Infinity, default: NaN },
      m: { type: "number", maximum: 10, enum: [1, Infinity] },
    },
  });
  assert.deepEqual(schema.properties, {
    n: { type: "number", minimum: null, maximum: null, default: null },
    m: { type: "number", maximum: 10, enum: [1, null] },
  });
  // Whatever is left is plain JSON.
  assert.deepEqual(JSON.parse(JSON.stringify(schema)), schema);
});

Deno.test("modelInputSchema() does not change its input", () => {
  const input = {
    type: "object",
    properties: { a: { $ref: "#/$defs/a", description: "A" } },
    $defs: { a: { type: "string" } },
    anyOf: [{ required: ["a"] }],
  };
  const before = structuredClone(input);
  modelInputSchema(input);
  assert.deepEqual(input, before);
});
