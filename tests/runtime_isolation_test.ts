/**
 * Enforces the layer rules of DESIGN.md by scanning `src/`:
 *
 * - only `src/runtime/` and `src/host/` touch `Deno`, `Bun`, `process` or `node:*`;
 * - only `src/server/`, `src/protocol/` and `src/transport/` import the ACP SDK;
 * - only `src/transport/http/` imports Hono;
 * - only `src/mcp/` imports the MCP SDK;
 * - only `src/store/postgres/` imports the PostgreSQL client (`postgres`), which is loaded only
 *   when that store is chosen.
 * - only `src/telemetry/` imports the Prometheus client (`prom-client`), which is loaded only when
 *   metrics are on.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { analyze, listTs, packageOf } from "./_helpers/import_scanner.ts";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

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
    allowed: ["server/", "protocol/", "transport/"],
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
  {
    description: "prom-client",
    allowed: ["telemetry/"],
    violates: ({ imports }) => imports.find((specifier) => packageOf(specifier) === "prom-client"),
  },
];

function violations(path: string, source: string): string[] {
  const { code, imports } = analyze(source);
  const analyzed = { code, imports: imports.map((site) => site.specifier) };
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
    ["cli/a.ts", 'import { Registry } from "prom-client";'],
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
    ["telemetry/prometheus_telemetry.ts", 'import { Counter } from "prom-client";'],
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

Deno.test("src/ keeps runtime, ACP SDK, Hono, MCP SDK, PostgreSQL and Prometheus client code in their folders", async () => {
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
