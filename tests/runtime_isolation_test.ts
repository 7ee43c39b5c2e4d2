/**
 * Enforces the layer rules of DESIGN.md by scanning `src/`:
 *
 * - only `src/runtime/` and `src/host/` touch `Deno`, `Bun`, `process` or `node:*`;
 * - only `src/protocol/` and `src/transport/` import the ACP SDK;
 * - only `src/transport/http/` imports Hono;
 * - only `src/mcp/` imports the MCP SDK;
 * - only `src/store/postgres/` imports the PostgreSQL client (`postgres`), which is loaded only
 *   when that store is chosen.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readdir, readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

/** Every `.ts` file under `dir`, as paths relative to `src/` with `/` separators. */
async function listTs(dir: string, prefix = ""): Promise<string[]> {
  const files: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const relative = prefix + entry.name;
    if (entry.isDirectory()) files.push(...await listTs(`${dir}/${entry.name}`, `${relative}/`));
    else if (entry.isFile() && entry.name.endsWith(".ts")) files.push(relative);
  }
  return files.sort();
}

/**
 * Splits source into code with comments removed and string, template and regex contents blanked
 * (`code`), and the module specifiers it imports or re-exports (`imports`). Code inside `${}` of
 * template literals stays code.
 */
function analyze(source: string): { code: string; imports: string[] } {
  let code = "";
  let withStrings = "";
  const emit = (kept: string, blanked = kept): void => {
    withStrings += kept;
    code += blanked;
  };
  // Contexts to return to: a number is the brace depth of the code that opened a template
  // literal; TEMPLATE marks a template whose `${` expression is being read.
  const TEMPLATE = -1;
  const stack: number[] = [];
  let depth = 0;
  let inTemplate = false;
  let at = 0;
  while (at < source.length) {
    const char = source[at] as string;
    const next = source[at + 1];
    if (inTemplate) {
      if (char === "\\") {
        emit(source.slice(at, at + 2), "  ");
        at += 2;
      } else if (char === "`") {
        emit(char);
        depth = stack.pop() ?? 0;
        inTemplate = false;
        at++;
      } else if (char === "$" && next === "{") {
        emit("${");
        stack.push(TEMPLATE);
        depth = 0;
        inTemplate = false;
        at += 2;
      } else {
        emit(char, char === "\n" ? "\n" : " ");
        at++;
      }
      continue;
    }
    if (char === "/" && next === "/") {
      const end = source.indexOf("\n", at);
      at = end === -1 ? source.length : end;
      continue;
    }
    if (char === "/" && next === "*") {
      const end = source.indexOf("*/", at + 2);
      at = end === -1 ? source.length : end + 2;
      emit(" ");
      continue;
    }
    if (char === "/" && startsRegex(code)) {
      let end = at + 1;
      let inClass = false;
      while (end < source.length && source[end] !== "\n") {
        const c = source[end];
        if (c === "\\") end++;
        else if (c === "[") inClass = true;
        else if (c === "]") inClass = false;
        else if (c === "/" && !inClass) break;
        end++;
      }
      emit("/" + " ".repeat(Math.max(0, end - at - 1)) + "/");
      at = end + 1;
      continue;
    }
    if (char === '"' || char === "'") {
      let end = at + 1;
      while (end < source.length && source[end] !== char && source[end] !== "\n") {
        if (source[end] === "\\") end++;
        end++;
      }
      const literal = source.slice(at, end + 1);
      emit(literal, char + " ".repeat(Math.max(0, literal.length - 2)) + char);
      at = end + 1;
      continue;
    }
    if (char === "`") {
      emit(char);
      stack.push(depth);
      inTemplate = true;
      at++;
      continue;
    }
    if (char === "}" && depth === 0 && stack.at(-1) === TEMPLATE) {
      emit(char);
      stack.pop();
      inTemplate = true;
      at++;
      continue;
    }
    if (char === "{") depth++;
    if (char === "}") depth--;
    emit(char);
    at++;
  }
  const imports: string[] = [];
  const patterns = [
    /\b(?:import|export)\s[^;'"`]*?\bfrom\s*["']([^"']+)["']/g,
    /\bimport\s*["']([^"']+)["']/g,
    /\bimport\s*\(\s*["'`]([^"'`]+)["'`]\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of withStrings.matchAll(pattern)) imports.push(match[1] as string);
  }
  return { code, imports };
}

/** Whether a `/` after `code` starts a regular expression rather than a division. */
function startsRegex(code: string): boolean {
  const before = code.trimEnd();
  if (before === "") return true;
  if (/[(,=:[!&|?{};+\-*%<>~^]$/.test(before)) return true;
  return /(?:^|[^\w$])(?:return|typeof|case|do|else|in|of|void|yield|await|delete|throw)$/.test(
    before,
  );
}

/** A bare package specifier without an `npm:` prefix or a version. */
function packageOf(specifier: string): string {
  const bare = specifier.replace(/^npm:\/?/, "");
  const parts = bare.split("/");
  const name = bare.startsWith("@") ? parts.slice(0, 2).join("/") : (parts[0] as string);
  return name.replace(/(.)@[^/]*$/, "$1");
}

const RUNTIME_GLOBAL = /(?<![\w$])(Deno|Bun|process)\s*(?:\.|\?\.|\[)/;

interface Rule {
  readonly description: string;
  readonly allowed: readonly string[];
  readonly violates: (file: { code: string; imports: readonly string[] }) => string | undefined;
}

const RULES: readonly Rule[] = [
  {
    description: "runtime globals and node: built-ins",
    allowed: ["runtime/", "host/"],
    violates: ({ code, imports }) =>
      code.match(RUNTIME_GLOBAL)?.[0] ?? imports.find((specifier) => specifier.startsWith("node:")),
  },
  {
    description: "@agentclientprotocol/sdk",
    allowed: ["protocol/", "transport/"],
    violates: ({ imports }) =>
      imports.find((specifier) => packageOf(specifier) === "@agentclientprotocol/sdk"),
  },
  {
    description: "hono",
    allowed: ["transport/http/"],
    violates: ({ imports }) => imports.find((specifier) => packageOf(specifier) === "hono"),
  },
  {
    description: "@modelcontextprotocol/*",
    allowed: ["mcp/"],
    violates: ({ imports }) =>
      imports.find((specifier) => packageOf(specifier).startsWith("@modelcontextprotocol/")),
  },
  {
    description: "postgres",
    allowed: ["store/postgres/"],
    violates: ({ imports }) => imports.find((specifier) => packageOf(specifier) === "postgres"),
  },
];

function violations(path: string, source: string): string[] {
  const analyzed = analyze(source);
  const found: string[] = [];
  for (const rule of RULES) {
    if (rule.allowed.some((folder) => path.startsWith(folder))) continue;
    const hit = rule.violates(analyzed);
    if (hit !== undefined) found.push(`src/${path}: ${rule.description} (${hit})`);
  }
  return found;
}

Deno.test("violations() detects each forbidden use outside its folder", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["session/a.ts", "const args = Deno.args;"],
    ["session/a.ts", "if (Bun.version) {}"],
    ["session/a.ts", "const env = process.env;"],
    ["session/a.ts", "const x = globalThis.process?.env;"],
    ["session/a.ts", 'import { readFile } from "node:fs/promises";'],
    ["session/a.ts", 'const fs = await import("node:fs");'],
    ["session/a.ts", 'import "node:process";'],
    ["agent/a.ts", 'import type { Agent } from "@agentclientprotocol/sdk";'],
    ["agent/a.ts", 'export { x } from "@agentclientprotocol/sdk/schema";'],
    ["transport/a.ts", 'import { Hono } from "hono";'],
    ["protocol/a.ts", 'import { cors } from "hono/cors";'],
    ["tools/a.ts", 'import { Client } from "@modelcontextprotocol/sdk/client/index.js";'],
    ["store/a.ts", 'import postgres from "postgres";'],
    ["session/a.ts", 'import {\n  a,\n  b,\n} from "node:path";'],
    ["session/a.ts", 'const home = `${Deno.env.get("HOME")}/x`;'],
    ["session/a.ts", "const t = `a ${`b ${process.pid}`} c`;"],
    ["session/a.ts", 'const re = /"id"\\s*:/;\nconst argv = process.argv;'],
    ["session/a.ts", "const half = total / 2; const more = 3 / 4; Bun.write();"],
  ];
  for (const [path, source] of cases) {
    assert.equal(violations(path, source).length, 1, `${path}: ${source}`);
  }
});

Deno.test("violations() allows each use inside its folder and ignores comments and strings", () => {
  const cases: ReadonlyArray<readonly [string, string]> = [
    ["runtime/deno.ts", "const args = Deno.args;"],
    ["host/node_host.ts", 'import { readFile } from "node:fs/promises"; process.cwd();'],
    ["protocol/a.ts", 'import type { Agent } from "@agentclientprotocol/sdk";'],
    ["transport/acp.ts", 'export type { Stream } from "@agentclientprotocol/sdk";'],
    ["transport/http/app.ts", 'import { Hono } from "hono";'],
    ["mcp/client.ts", 'import { Client } from "@modelcontextprotocol/sdk/client/index.js";'],
    ["store/postgres/postgres_store.ts", 'import postgres from "postgres";'],
    ["session/a.ts", "/** ndJsonStream(Deno.stdout.writable, Deno.stdin.readable) */"],
    ["session/a.ts", '// import { x } from "node:fs";\nconst a = 1;'],
    ["session/a.ts", 'const message = "the process. Deno.exit is not called";'],
    ["session/a.ts", "const processed = 1; const subprocess = { x: 1 }; subprocess.x;"],
    ["session/a.ts", 'const url = "https://example.com/node:fs";'],
    ["session/a.ts", 'import { z } from "zod"; import { honoLike } from "./hono_like.ts";'],
    ["session/a.ts", "const re = /Deno.exit|process.env/; const t = `Deno.${name}`;"],
    ["session/a.ts", "const s = `${a}\\`Deno.x\\`${b}`; const o = { x: `${c({ d: 1 })}` };"],
  ];
  for (const [path, source] of cases) {
    assert.deepEqual(violations(path, source), [], `${path}: ${source}`);
  }
});

Deno.test("src/ keeps runtime, ACP SDK, Hono, MCP SDK and PostgreSQL client code in their folders", async () => {
  const files = await listTs(SRC);
  assert.ok(files.length > 10, `expected to find the sources under ${SRC}`);
  for (const known of ["runtime/deno.ts", "transport/nd_json_stream.ts", "agent/run_turn.ts"]) {
    assert.ok(files.includes(known), `scan missed src/${known}`);
  }
  const found: string[] = [];
  for (const file of files) {
    found.push(...violations(file, await readFile(`${SRC}${file}`, "utf8")));
  }
  assert.deepEqual(found, [], `layer rules broken:\n${found.join("\n")}`);
});
