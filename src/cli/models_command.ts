/**
 * `acp-harness models`: the models the server knows, whether each can be used now, and what is
 * known of them, as a table or as JSON.
 *
 * @module
 */
import type { DiscoveryResult, ModelListing } from "../llm/catalog.ts";

/** One model as `acp-harness models --json` prints it. */
export interface ModelsJsonEntry extends ModelListing {
  /** Whether it is the server's default model (`--model`). */
  readonly default: boolean;
}

/** What `acp-harness models --json` prints. */
export interface ModelsJson {
  /** Every known model: the offered ones first, in the picker's order. */
  readonly models: readonly ModelsJsonEntry[];
  /** What each provider that lists its own models (Ollama) answered. */
  readonly discovery: readonly DiscoveryResult[];
}

/**
 * The JSON document of `acp-harness models --json`.
 *
 * @param listings The catalog's models
 * @param defaultModel The server's default model id
 * @param discovery What the model list queries found
 * @returns The document
 */
export function modelsJson(
  listings: readonly ModelListing[],
  defaultModel: string,
  discovery: readonly DiscoveryResult[],
): ModelsJson {
  return {
    models: listings.map((listing) => ({ ...listing, default: listing.id === defaultModel })),
    discovery,
  };
}

/**
 * The table of `acp-harness models`: one line per model with its id, provider, whether it can be
 * used now, context window, output limit and price (USD per million input and output tokens);
 * the last column says why a model cannot be used, or marks the default. Columns line up;
 * unknown facts are `-`.
 *
 * @example A two-model table
 * ```ts
 * import assert from "node:assert/strict";
 * import { formatModelTable } from "./models_command.ts";
 * const base = { name: "", description: "", image: false, reasoningEfforts: [], offered: true };
 * const table = formatModelTable([
 *   { ...base, id: "echo", provider: "echo", model: "echo", available: true },
 *   {
 *     ...base, id: "openai/gpt-5", provider: "openai", model: "gpt-5", available: false,
 *     reason: "OPENAI_API_KEY is not set", offered: false, contextWindow: 400_000,
 *     pricing: { input: 1.25, output: 10 },
 *   },
 * ], "echo");
 * assert.equal(table.split("\n")[2], "openai/gpt-5  openai    no      400k     -           1.25/10       OPENAI_API_KEY is not set");
 * ```
 *
 * @param listings The catalog's models
 * @param defaultModel The server's default model id
 * @returns The table, header first, each line ending in a newline
 */
export function formatModelTable(listings: readonly ModelListing[], defaultModel: string): string {
  const rows: string[][] = [[
    "MODEL",
    "PROVIDER",
    "USABLE",
    "CONTEXT",
    "MAX OUTPUT",
    "USD/M IN/OUT",
    "NOTE",
  ]];
  for (const listing of listings) {
    rows.push([
      listing.id,
      listing.provider,
      listing.available ? "yes" : "no",
      tokens(listing.contextWindow),
      tokens(listing.maxOutputTokens),
      listing.pricing ? `${listing.pricing.input}/${listing.pricing.output}` : "-",
      listing.reason ?? (listing.id === defaultModel ? "default" : ""),
    ]);
  }
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) =>
    row.map((cell, column) => column === row.length - 1 ? cell : cell.padEnd(widths[column]!))
      .join("  ").trimEnd() + "\n"
  ).join("");
}

/** A token count in short form: `1M`, `400k`, `4096`; `-` when unknown. */
function tokens(count: number | undefined): string {
  if (count === undefined) return "-";
  if (count >= 1_000_000 && count % 1_000_000 === 0) return `${count / 1_000_000}M`;
  if (count >= 1_000 && count % 1_000 === 0) return `${count / 1_000}k`;
  return String(count);
}
