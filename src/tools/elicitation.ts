/**
 * Questions a running tool call puts to the user through the client (ACP `elicitation/create`):
 * what is asked (a form, or a URL to open), what comes back, and {@link checkContent}, which holds
 * a form's answer to the form that was asked.
 *
 * @module
 */
import { isRecord } from "../util/json.ts";

/** One value of a form's answer: what ACP and MCP elicitation content carry. */
export type ElicitationValue = string | number | boolean | readonly string[];

/** A form's answer: a value per field. */
export type ElicitationContent = Readonly<Record<string, ElicitationValue>>;

/**
 * The form a question shows: a flat JSON schema of primitive fields (string, number, integer,
 * boolean, and arrays of strings for a choice of several), as ACP's `ElicitationSchema` and MCP's
 * `requestedSchema` describe it. Each field's schema is passed on as given.
 */
export interface ElicitationSchema {
  /** Always `object`. */
  readonly type: "object";
  /** The fields, each a flat JSON schema (string, number, integer, boolean, enum). */
  readonly properties: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** The fields that must be answered. */
  readonly required?: readonly string[];
  /** The form's title. */
  readonly title?: string;
  /** What the form is about. */
  readonly description?: string;
}

/** What is asked: a form to fill in, or a URL to open (an out-of-band flow, such as a login). */
export type ElicitationRequest =
  | {
    readonly mode: "form";
    /** What the user is told. */
    readonly message: string;
    readonly requestedSchema: ElicitationSchema;
  }
  | {
    readonly mode: "url";
    /** What the user is told. */
    readonly message: string;
    /** Where the user is sent. */
    readonly url: string;
    /** The flow's id, which `elicitation/complete` names once it is done. */
    readonly elicitationId: string;
  };

/**
 * The user's answer: `accept` (with the form's content), `decline` (an explicit no), or `cancel`
 * (dismissed, not answered in time, or withdrawn). Anything that goes wrong on the way is a
 * `decline` or a `cancel`, never an `accept`.
 */
export type ElicitationAnswer =
  | { readonly action: "accept"; readonly content?: ElicitationContent }
  | { readonly action: "decline" }
  | { readonly action: "cancel" };

/** A question a running tool call asks (see `ToolContext.elicit`), as the turn hands it on. */
export interface RelayedElicitation {
  /** The asking tool's name (`ask_user`, `mcp__<server>__<tool>`). */
  readonly tool: string;
  /** The running call's id: the question is shown under it. */
  readonly toolCallId: string;
  readonly request: ElicitationRequest;
  /** Aborted when the call is cancelled or the question withdrawn. */
  readonly signal: AbortSignal;
}

/** A question for the client, as a session asks it. */
export interface ElicitationQuestion {
  readonly sessionId: string;
  readonly toolCallId: string;
  readonly request: ElicitationRequest;
  /** Aborted when the call is cancelled or the question withdrawn. */
  readonly signal: AbortSignal;
}

/**
 * Asks the client (`elicitation/create`). Never rejects: a client error, a malformed answer or a
 * mode the client did not advertise is `decline`; no answer within the timeout, or a question
 * withdrawn, is `cancel`.
 */
export type ElicitationAsker = (question: ElicitationQuestion) => Promise<ElicitationAnswer>;

/** The most fields a form may have. */
const MAX_FIELDS = 100;

/**
 * Holds a form's answer to the form: every value of the kind its field declares (a string for
 * `string`, a finite number for `number`, an integer for `integer`, a boolean, an array of strings
 * for `array`) and among the field's choices when it lists some (`enum`, `oneOf`, the items'
 * `enum` or `anyOf`); every required field present. Fields the form does not have are dropped.
 * Lengths, patterns and formats are the asker's to check (MCP servers validate their own answers).
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { checkContent } from "./elicitation.ts";
 * const schema = {
 *   type: "object" as const,
 *   properties: { size: { type: "string", enum: ["S", "M"] }, count: { type: "integer" } },
 *   required: ["size"],
 * };
 * assert.deepEqual(checkContent(schema, { size: "M", extra: 1 }), { content: { size: "M" } });
 * assert.deepEqual(checkContent(schema, { size: "XL" }), {
 *   problem: 'content.size: expected one of "S", "M"',
 * });
 * assert.deepEqual(checkContent(schema, {}), { problem: "content.size: required" });
 * ```
 *
 * @param schema The form that was asked
 * @param content The answer's `content` (unchecked; absent is no field filled in)
 * @returns The content with only the form's fields, or what is wrong with it
 */
export function checkContent(
  schema: ElicitationSchema,
  content: unknown,
): { readonly content: ElicitationContent } | { readonly problem: string } {
  if (content !== undefined && content !== null && !isRecord(content)) {
    return { problem: "content: expected an object" };
  }
  const given = (content ?? {}) as Record<string, unknown>;
  const kept: Array<[string, ElicitationValue]> = [];
  for (const [name, field] of Object.entries(schema.properties)) {
    if (!Object.hasOwn(given, name) || given[name] === undefined || given[name] === null) {
      if (schema.required?.includes(name)) return { problem: `content.${name}: required` };
      continue;
    }
    const value = given[name];
    const problem = valueProblem(field, value);
    if (problem !== undefined) return { problem: `content.${name}: ${problem}` };
    kept.push([name, value as ElicitationValue]);
  }
  // Own properties whatever their names (`__proto__` too).
  return { content: Object.fromEntries(kept) };
}

/**
 * What is wrong with a form to be shown, or `undefined` when it is one: an object schema with at
 * most 100 fields, each an object with a `type`.
 *
 * @param schema The form (unchecked)
 * @returns The problem, or undefined
 */
export function schemaProblem(schema: unknown): string | undefined {
  if (!isRecord(schema)) return "requestedSchema: expected an object";
  if (schema.type !== undefined && schema.type !== "object") {
    return 'requestedSchema.type: expected "object"';
  }
  const properties = schema.properties ?? {};
  if (!isRecord(properties)) return "requestedSchema.properties: expected an object";
  const names = Object.keys(properties);
  if (names.length > MAX_FIELDS) {
    return `requestedSchema.properties: at most ${MAX_FIELDS} fields (got ${names.length})`;
  }
  for (const name of names) {
    const field = properties[name];
    if (!isRecord(field) || typeof field.type !== "string") {
      return `requestedSchema.properties.${name}: expected an object with a type`;
    }
  }
  const required = schema.required;
  if (
    required !== undefined && required !== null &&
    (!Array.isArray(required) || required.some((name) => typeof name !== "string"))
  ) {
    return "requestedSchema.required: expected an array of field names";
  }
  return undefined;
}

/** What is wrong with one value of a field, or undefined. */
function valueProblem(
  field: Readonly<Record<string, unknown>>,
  value: unknown,
): string | undefined {
  switch (field.type) {
    case "string": {
      if (typeof value !== "string") return "expected a string";
      const choices = choicesOf(field.enum, field.oneOf);
      return choices && !choices.includes(value) ? `expected one of ${listed(choices)}` : undefined;
    }
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? undefined : "expected a number";
    case "integer":
      return Number.isInteger(value) ? undefined : "expected an integer";
    case "boolean":
      return typeof value === "boolean" ? undefined : "expected a boolean";
    case "array": {
      if (!Array.isArray(value) || value.some((item) => typeof item !== "string")) {
        return "expected an array of strings";
      }
      const items = isRecord(field.items) ? field.items : {};
      const choices = choicesOf(items.enum, items.anyOf);
      const wrong = choices ? value.find((item) => !choices.includes(item)) : undefined;
      return wrong === undefined ? undefined : `expected items among ${listed(choices ?? [])}`;
    }
    default:
      // A kind this server does not know (a custom one): the client's answer is passed on.
      return isValue(value) ? undefined : "expected a string, number, boolean or strings";
  }
}

/** The choices a field lists (`enum` strings, or `const` of `oneOf`/`anyOf` options). */
function choicesOf(values: unknown, options: unknown): readonly string[] | undefined {
  if (Array.isArray(values)) return values.filter((value) => typeof value === "string");
  if (Array.isArray(options)) {
    return options.flatMap((option) =>
      isRecord(option) && typeof option.const === "string" ? [option.const] : []
    );
  }
  return undefined;
}

function isValue(value: unknown): boolean {
  return typeof value === "string" || typeof value === "boolean" ||
    (typeof value === "number" && Number.isFinite(value)) ||
    (Array.isArray(value) && value.every((item) => typeof item === "string"));
}

function listed(choices: readonly string[]): string {
  const shown = choices.slice(0, 10).map((choice) => JSON.stringify(choice)).join(", ");
  return choices.length > 10 ? `${shown}, …` : shown;
}
