/**
 * The statistics the benchmark files share: median, nearest-rank percentile, and a sample
 * summed up as median, min and max.
 *
 * @module
 */

/**
 * The median (the mean of the two middle values for an even count).
 *
 * @param values The sample, in any order
 * @returns Its median; `NaN` for an empty sample
 */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? sorted[middle] ?? Number.NaN
    : ((sorted[middle - 1] ?? Number.NaN) + (sorted[middle] ?? Number.NaN)) / 2;
}

/**
 * The nearest-rank percentile.
 *
 * @param values The sample, in any order
 * @param fraction In (0, 1]
 * @returns The value at that rank; `NaN` for an empty sample
 */
export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil(fraction * sorted.length) - 1)] ?? Number.NaN;
}

/** Median, min and max of a sample. */
export interface Summary {
  readonly median: number;
  readonly min: number;
  readonly max: number;
}

/**
 * Median, min and max of `values`.
 *
 * @param values The sample, in any order
 * @returns Its summary; all `NaN` for an empty sample
 */
export function summarize(values: readonly number[]): Summary {
  if (values.length === 0) return { median: Number.NaN, min: Number.NaN, max: Number.NaN };
  const sorted = [...values].sort((a, b) => a - b);
  return { median: median(sorted), min: sorted[0] ?? Number.NaN, max: sorted.at(-1) ?? Number.NaN };
}

/** The spread of a sample: its interquartile range and its extremes. */
export interface RatioSpread {
  /** The median. */
  readonly median: number;
  /** 25th percentile (nearest rank). */
  readonly low: number;
  /** 75th percentile (nearest rank). */
  readonly high: number;
  readonly min: number;
  readonly max: number;
}

/**
 * The median, interquartile range (nearest-rank 25th – 75th percentile) and extremes of
 * `values`: what the targets on per-round ratios are judged on.
 *
 * @param values The sample (per-round ratios), in any order
 * @returns Its spread; all `NaN` for an empty sample
 */
export function ratioSpread(values: readonly number[]): RatioSpread {
  const { median: middle, min, max } = summarize(values);
  return {
    median: middle,
    low: percentile(values, 0.25),
    high: percentile(values, 0.75),
    min,
    max,
  };
}
