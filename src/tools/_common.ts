/**
 * Internal helpers shared by the built-in tools: input validation (against the schemas of
 * tool.ts), titles and locations of unchecked input, results, and path resolution that turns
 * refusals into results.
 *
 * @module
 */
import { resolveToolPath } from "./paths.ts";
import { joinPath } from "./posix_path.ts";
import { quote } from "./_text.ts";
import type {
  ObjectSchema,
  PropertySchema,
  ToolContext,
  ToolLocation,
  ToolResult,
} from "./tool.ts";

/**
 * Checks `input` against `schema`. An optional field may also be `null`, which counts as absent
 * (models often send that). Returns a message naming the first bad field, or `undefined`.
 */
export function validateInput(schema: ObjectSchema, input: unknown): string | undefined {
  const fields = Object.keys(schema.properties);
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    return `Invalid input: expected an object with the fields ${fields.join(", ")} (got ${
      typeName(input)
    })`;
  }
  const record = input as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    if (!Object.hasOwn(schema.properties, name)) {
      return `Invalid input: unknown field ${quote(name)} (expected: ${fields.join(", ")})`;
    }
  }
  for (const [name, property] of Object.entries(schema.properties)) {
    const value = record[name];
    if (value === undefined || value === null) {
      if (schema.required.includes(name)) return `Invalid input: ${quote(name)} is required`;
      continue;
    }
    const problem = checkProperty(property, value);
    if (problem !== undefined) return `Invalid input: ${quote(name)} ${problem}`;
  }
  return undefined;
}

function checkProperty(property: PropertySchema, value: unknown): string | undefined {
  switch (property.type) {
    case "string":
      if (typeof value !== "string") return `must be a string (got ${typeName(value)})`;
      if (property.minLength !== undefined && value.length < property.minLength) {
        return property.minLength === 1
          ? "must not be empty"
          : `must have at least ${property.minLength} characters`;
      }
      return undefined;
    case "boolean":
      return typeof value === "boolean" ? undefined : `must be a boolean (got ${typeName(value)})`;
    case "integer": {
      if (typeof value !== "number" || !Number.isInteger(value)) {
        return `must be an integer (got ${
          typeof value === "number" ? String(value) : typeName(value)
        })`;
      }
      if (property.minimum !== undefined && value < property.minimum) {
        return `must be at least ${property.minimum} (got ${value})`;
      }
      if (property.maximum !== undefined && value > property.maximum) {
        return `must be at most ${property.maximum} (got ${value})`;
      }
      return undefined;
    }
  }
}

function typeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return "an object";
  return `a ${typeof value}`;
}

/** A string field of an unvalidated input, or `undefined` (for titles and locations). */
export function stringField(input: unknown, name: string): string | undefined {
  if (typeof input !== "object" || input === null) return undefined;
  const value = (input as Record<string, unknown>)[name];
  return typeof value === "string" ? value : undefined;
}

/**
 * The title of a call on the path in `input.path`: `Read src/a.ts`, or `fallback` while it has
 * none (for `Tool.title`).
 */
export function pathTitle(input: unknown, verb: string, fallback: string): string {
  const path = stringField(input, "path");
  return path ? `${verb} ${path}` : fallback;
}

/**
 * The location of a directory field, resolved against `cwd` without I/O, the working directory
 * when the field is missing or unusable (for `Tool.locations`).
 */
export function directoryLocations(input: unknown, cwd: string, name: string): ToolLocation[] {
  const dir = stringField(input, name);
  return [{ path: joinPath(cwd, dir && !dir.includes("\0") ? dir : ".") }];
}

/** The location of a path field, resolved against `cwd` without I/O (for `Tool.locations`). */
export function pathLocations(input: unknown, cwd: string, name = "path"): ToolLocation[] {
  const path = stringField(input, name);
  if (path === undefined || path === "" || path.includes("\0")) return [];
  return [{ path: joinPath(cwd, path) }];
}

/** A failed tool result. */
export function errorResult(content: string): ToolResult {
  return { content, isError: true };
}

/** The result of a call whose signal aborted. */
export function cancelledResult(): ToolResult {
  return errorResult("Cancelled: the tool call was aborted");
}

/** Resolves a path inside the workspace, or the error result that refuses it. */
export async function resolveOrError(
  context: ToolContext,
  path: string,
): Promise<{ ok: true; path: string } | { ok: false; result: ToolResult }> {
  const resolved = await resolveToolPath(context.files, context, path);
  if (context.signal.aborted) return { ok: false, result: cancelledResult() };
  if (!resolved.ok) return { ok: false, result: errorResult(resolved.reason) };
  return resolved;
}

/**
 * Reads a text file for a tool: through the workspace, refusing binary content (NUL bytes), or
 * the error result that says why not (`Cannot <verb> <shown>: …`).
 */
export async function readTextOrError(
  context: ToolContext,
  file: string,
  shown: string,
  verb: string,
): Promise<{ ok: true; text: string } | { ok: false; result: ToolResult }> {
  let text: string;
  try {
    text = await context.workspace.readTextFile(file, { signal: context.signal });
  } catch (error) {
    if (context.signal.aborted) return { ok: false, result: cancelledResult() };
    return {
      ok: false,
      result: errorResult(`Cannot ${verb} ${quote(shown)}: ${describeError(error)}`),
    };
  }
  if (context.signal.aborted) return { ok: false, result: cancelledResult() };
  if (text.includes("\0")) {
    return {
      ok: false,
      result: errorResult(
        `Cannot ${verb} ${quote(shown)}: it looks like a binary file (it has NUL bytes)`,
      ),
    };
  }
  return { ok: true, text };
}

/** The message of an error, for results. */
export function describeError(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (code === "ENOENT") return "it does not exist";
    if (code === "EACCES" || code === "EPERM") return "permission denied";
    if (code === "EISDIR") return "it is a directory";
    if (code === "ENOTDIR") return "a parent of it is not a directory";
    return error.message;
  }
  return String(error);
}
