import assert from "node:assert/strict";
import { renderReport } from "../../bench/report.ts";
import type { Results } from "../../bench/results.ts";
import { parseSettings } from "../../bench/settings.ts";

/** A run in which nothing was measured and four phases failed on one runtime. */
function emptyRun(): Results {
  return {
    settings: parseSettings(["--quick", "--runtime", "deno"]),
    machine: {
      date: "2026-01-01T00:00:00.000Z",
      nproc: 2,
      cpu: "a CPU",
      memoryGib: 4,
      kernel: "6.0",
      node: "v22",
      deno: "deno 2",
      bun: "1.2",
      clientCeiling: undefined,
      load: [0.5, 0.5],
    },
    runtimes: [{
      runtime: "deno",
      exitMs: { ours: [], bare: [] },
      errors: ["MCP: no node", "HTTP: no port", "LLM breakdown: no model", "LLM turn: no model"],
    }],
    warnings: ["a warning"],
    appends: { results: [], errors: [] },
    fixture: undefined,
    mcpGraph: "not read",
    httpGraph: "not read",
    compiled: "not built",
    builds: "not measured (--only)",
    profiles: "not measured (--only)",
  };
}

Deno.test("renderReport() counts every result cell in its Result line", () => {
  const report = renderReport(emptyRun());
  const passed = report.match(/\| pass \|/g)?.length ?? 0;
  const failed = report.match(/\| \*\*FAIL\*\*( \(see Errors\))? \|/g)?.length ?? 0;
  assert.ok(failed > 0);
  assert.match(report, new RegExp(`^Result: ${passed} targets met, ${failed} missed\\.$`, "m"));
});

Deno.test("renderReport() writes every section in order, then the warnings and errors", () => {
  const headings = renderReport(emptyRun()).split("\n").filter((line) => line.startsWith("## "));
  const expected = [
    "## Start-up",
    "## Exit after stdin EOF (",
    "## `session/new` on a running server",
    "## Exit after stdin EOF with",
    "## Start-up by build",
    "## What start-up loads",
    "## Prompt round trip",
    "## Update throughput",
    "## LLM turn",
    "## Time to first update",
    "## CPU per streamed delta",
    "## Durable sessions",
    "## MCP servers",
    "## Delegation",
    "## HTTP transport",
    "## Compaction",
    "## Worktrees and checkpoints",
    "## Scale",
    "## Peak RSS",
    "## Noise",
    "## Warnings",
    "## Errors",
  ];
  assert.equal(headings.length, expected.length, headings.join("\n"));
  expected.forEach((start, i) => assert.ok(headings[i]?.startsWith(start), headings[i]));
});

Deno.test("parseSettings() takes --quick, --runtime and --only, and refuses an unknown phase", () => {
  const settings = parseSettings(["--quick", "--runtime=node,deno", "--only", "HTTP,builds"]);
  assert.deepEqual(settings.runtimes, ["node", "deno"]);
  assert.deepEqual(settings.only, ["HTTP", "builds"]);
  assert.equal(settings.startupRuns, 3);
  assert.deepEqual(parseSettings([]).runtimes, ["deno", "node", "bun"]);
  assert.throws(() => parseSettings(["--only", "nothing"]), /--only expects/);
});
