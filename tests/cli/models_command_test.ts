import assert from "node:assert/strict";
import { ModelCatalog } from "../../src/llm/catalog.ts";
import { builtinProviders } from "../../src/llm/presets.ts";
import { formatModelTable, modelsJson } from "../../src/cli/models_command.ts";

const env = (vars: Record<string, string>) => (name: string): string | undefined => vars[name];

Deno.test("formatModelTable() lines up its columns and says why a model cannot be used", () => {
  const vars = { OPENAI_API_KEY: "sk" };
  const catalog = new ModelCatalog({ providers: builtinProviders(env(vars)), env: env(vars) });
  const table = formatModelTable(catalog.known(), "echo");
  const lines = table.trimEnd().split("\n");
  const header = lines[0] ?? "";
  assert.match(header, /^MODEL +PROVIDER +USABLE +CONTEXT +MAX OUTPUT +USD\/M IN\/OUT +NOTE$/);
  const starts = ["PROVIDER", "USABLE", "CONTEXT", "MAX OUTPUT", "USD/M IN/OUT"].map((title) =>
    header.indexOf(title)
  );
  for (const line of lines.slice(1)) {
    for (const start of starts) assert.equal(line[start - 1], " ", `${line} @${start}`);
    for (const start of starts) assert.notEqual(line[start], " ", `${line} @${start}`);
  }
  const row = (id: string): string => lines.find((line) => line.startsWith(`${id} `)) ?? "";
  assert.match(row("echo"), /^echo +echo +yes +- +- +- +default$/);
  assert.match(row("openai/gpt-5"), /^openai\/gpt-5 +openai +yes +400k +128k +1\.25\/10$/);
  assert.match(row("scripted"), / no .* needs --script$/);
  assert.match(row("anthropic/claude-opus-5-5"), / no .* ANTHROPIC_API_KEY is not set$/);
  assert.match(row("deepseek/deepseek-v4-pro"), / 1M +384k /);
});

Deno.test("modelsJson() marks the default model and keeps every listing field", () => {
  const catalog = new ModelCatalog({ providers: builtinProviders(env({})), env: env({}) });
  const json = modelsJson(catalog.known(), "echo", []);
  assert.deepEqual(json.discovery, []);
  const echo = json.models.find((model) => model.id === "echo");
  assert.equal(echo?.default, true);
  assert.equal(echo?.available, true);
  const gpt = json.models.find((model) => model.id === "openai/gpt-5");
  assert.equal(gpt?.default, false);
  assert.equal(gpt?.reason, "OPENAI_API_KEY is not set");
  assert.deepEqual(gpt?.pricing, { input: 1.25, output: 10, cacheRead: 0.125 });
});
