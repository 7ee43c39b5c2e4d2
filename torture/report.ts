/**
 * The torture suite's table: scenario × runtime → runs and failures by kind.
 *
 * @module
 */
import type { Tally } from "./context.ts";

/** One row of the table. */
export interface Row {
  readonly scenario: string;
  readonly runtime: string;
  readonly tally: Tally;
}

const COLUMNS = [
  "scenario",
  "runtime",
  "runs",
  "crashes",
  "lost events",
  "leftovers",
  "unconsented",
  "escapes",
  "other",
  "seconds",
] as const;

/** Total failures of a tally. */
export function failures(tally: Tally): number {
  return tally.crashes + tally.lost + tally.leftovers + tally.unconsented + tally.escapes +
    tally.other;
}

/** The table as Markdown, then the failure kinds with examples. */
export function formatTable(rows: readonly Row[]): string {
  const cells = rows.map((row) => [
    row.scenario,
    row.runtime,
    String(row.tally.runs),
    String(row.tally.crashes),
    String(row.tally.lost),
    String(row.tally.leftovers),
    String(row.tally.unconsented),
    String(row.tally.escapes),
    String(row.tally.other),
    row.tally.seconds.toFixed(1),
  ]);
  const widths = COLUMNS.map((title, column) =>
    Math.max(title.length, ...cells.map((row) => (row[column] ?? "").length))
  );
  const line = (values: readonly string[]): string =>
    `| ${
      values.map((value, column) =>
        column < 2 ? value.padEnd(widths[column] ?? 0) : value.padStart(widths[column] ?? 0)
      ).join(" | ")
    } |`;
  const out = [
    line(COLUMNS),
    `|${
      widths.map((width, column) =>
        column < 2 ? `-${"-".repeat(width)}-` : `-${"-".repeat(width)}:`
      ).join("|")
    }|`,
    ...cells.map(line),
  ];
  const details: string[] = [];
  for (const row of rows) {
    for (const [kind, count] of row.tally.kinds) {
      details.push(`- ${row.scenario} / ${row.runtime}: ${kind} × ${count}`);
      for (const example of row.tally.examples.get(kind) ?? []) {
        details.push(`    e.g. ${example.replaceAll("\n", " ")}`);
      }
    }
  }
  if (details.length > 0) out.push("", "Failures by kind:", ...details);
  return out.join("\n");
}
