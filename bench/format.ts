/**
 * The pieces every section of `bench/RESULTS.md` is written with: number formats, Markdown
 * tables, and {@link Tally}, whose `verdict()` writes a target's result cell and counts it for
 * the report's "Result: N targets met, M missed" line.
 *
 * @module
 */

/**
 * `value` with `digits` decimals, or `n/a` when it is missing.
 *
 * @example
 * ```ts
 * import { fixed } from "./format.ts";
 * if (fixed(1.234, 1) !== "1.2" || fixed(undefined, 1) !== "n/a") throw new Error();
 * ```
 */
export function fixed(value: number | undefined, digits: number): string {
  return value === undefined || Number.isNaN(value) ? "n/a" : value.toFixed(digits);
}

/** `value` rounded, with thousands separators, or `n/a` when it is missing. */
export function thousands(value: number | undefined): string {
  return value === undefined || Number.isNaN(value)
    ? "n/a"
    : Math.round(value).toLocaleString("en-US");
}

/** Ours over bare, or undefined when either is missing or bare is 0. */
export function ratioOf(ours: number | undefined, bare: number | undefined): number | undefined {
  return ours === undefined || bare === undefined || bare === 0 ? undefined : ours / bare;
}

/** A ratio as `1.23×`, or `n/a` when it is missing. */
export function ratioText(ratio: number | undefined): string {
  return ratio === undefined || Number.isNaN(ratio) ? "n/a" : `${ratio.toFixed(2)}×`;
}

/** A Markdown table. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]): string => `| ${cells.join(" | ")} |`;
  return [line(header), line(header.map(() => "---")), ...rows.map(line)].join("\n");
}

/**
 * Counts the targets of a report and writes their result cells.
 *
 * @example
 * ```ts
 * import { Tally } from "./format.ts";
 * const tally = new Tally();
 * const cells = [tally.verdict(true), tally.verdict(false), tally.verdict(undefined, true)];
 * if (cells.join(", ") !== "pass, **FAIL**, **FAIL** (see Errors)") throw new Error();
 * if (tally.passed !== 1 || tally.failed !== 2) throw new Error();
 * ```
 */
export class Tally {
  /** Targets met. */
  passed = 0;
  /** Targets missed, or whose phase failed. */
  failed = 0;
  /** Of the targets met, those whose spread straddles the target ("met within noise"). */
  withinNoise = 0;

  /**
   * Counts one target and returns its result cell: `pass`, `**FAIL**`, `n/a` (not measured),
   * or `**FAIL** (see Errors)` when its phase failed (counted as missed).
   *
   * @param pass Whether the target was met; undefined when it was not measured
   * @param phaseFailed Whether its phase failed (its error is in the report's Errors)
   */
  verdict(pass: boolean | undefined, phaseFailed = false): string {
    const value = phaseFailed ? false : pass;
    if (value === true) this.passed++;
    if (value === false) this.failed++;
    return phaseFailed
      ? "**FAIL** (see Errors)"
      : value === undefined
      ? "n/a"
      : value
      ? "pass"
      : "**FAIL**";
  }

  /**
   * Counts one target judged on the spread of its per-round ratios and returns its result cell:
   * `pass` when the whole spread is at or under the target, `**FAIL**` when it is all over it,
   * `met within noise` (counted as met) when it straddles the target.
   *
   * @param spread The spread's low and high ends; undefined when it was not measured
   * @param target The highest ratio that meets the target
   * @param phaseFailed Whether its phase failed (its error is in the report's Errors)
   */
  spreadVerdict(
    spread: { readonly low: number; readonly high: number } | undefined,
    target: number,
    phaseFailed = false,
  ): string {
    if (phaseFailed || spread === undefined || Number.isNaN(spread.low)) {
      return this.verdict(undefined, phaseFailed);
    }
    if (spread.high <= target) return this.verdict(true);
    if (spread.low > target) return this.verdict(false);
    this.passed++;
    this.withinNoise++;
    return "met within noise";
  }
}
