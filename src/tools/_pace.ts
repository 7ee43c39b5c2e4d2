/**
 * Internal: cooperative pacing for tools that work on untrusted input whose size the model
 * chooses (file contents, directory trees). Long synchronous work is cut into slices; between
 * slices the tool awaits a macrotask, so timers, I/O and other sessions run, and checks its
 * signal, so a cancel stops it.
 *
 * @module
 */

/** Most milliseconds of synchronous work between two yields to the event loop. */
export const PACE_SLICE_MS = 4;
/** Most work units (lines, entries) between two yields, whatever the clock says. */
export const PACE_SLICE_UNITS = 65_536;
/** The clock is read once per this many units. */
const CLOCK_EVERY_UNITS = 32;

/**
 * Counts work and says when to yield. Call {@link Pacer.due} after each unit of work (it is
 * cheap); when it returns `true`, `await` {@link Pacer.pause}. After any other await (real I/O
 * gives the event loop its turn too), call {@link Pacer.rested}.
 */
export class Pacer {
  readonly #signal: AbortSignal;
  #units = 0;
  #since: number = performance.now();

  /** @param signal Checked by {@link Pacer.pause} */
  constructor(signal: AbortSignal) {
    this.#signal = signal;
  }

  /**
   * Counts `units` of work done since the last yield.
   *
   * @param units How much work was done (default 1)
   * @returns Whether the slice is used up and the caller should {@link Pacer.pause}
   */
  due(units = 1): boolean {
    const before = this.#units;
    this.#units += units;
    if (this.#units >= PACE_SLICE_UNITS) return true;
    if (Math.floor(before / CLOCK_EVERY_UNITS) === Math.floor(this.#units / CLOCK_EVERY_UNITS)) {
      return false;
    }
    return performance.now() - this.#since >= PACE_SLICE_MS;
  }

  /**
   * Yields to the event loop (a macrotask, so timers and I/O callbacks run) and starts a new slice.
   *
   * @returns Whether the work may go on (`false` once the signal has aborted)
   */
  async pause(): Promise<boolean> {
    if (this.#signal.aborted) return false;
    await new Promise<void>((resolve) => setTimeout(resolve, 0));
    this.rested();
    return !this.#signal.aborted;
  }

  /** Starts a new slice: the caller has just awaited I/O, which gave the event loop a turn. */
  rested(): void {
    this.#units = 0;
    this.#since = performance.now();
  }
}

/**
 * Sorts `items` in place by code-unit order of `key`, as a bottom-up merge sort that yields
 * through `pacer` so that sorting a huge directory listing never blocks the event loop for long.
 *
 * @returns Whether the sort finished (`false` when the signal aborted; `items` is then unsorted)
 */
export async function sortPaced<T>(
  items: T[],
  key: (item: T) => string,
  pacer: Pacer,
): Promise<boolean> {
  const run = 256;
  const compare = (a: T, b: T): number => {
    const x = key(a);
    const y = key(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
  if (items.length <= run) {
    items.sort(compare);
    return true;
  }
  for (let start = 0; start < items.length; start += run) {
    const sorted = items.slice(start, start + run).sort(compare);
    for (let index = 0; index < sorted.length; index++) items[start + index] = sorted[index] as T;
    if (pacer.due(run) && !(await pacer.pause())) return false;
  }
  let source = items;
  let target: T[] = new Array<T>(items.length);
  for (let width = run; width < items.length; width *= 2) {
    for (let left = 0; left < items.length; left += 2 * width) {
      const middle = Math.min(left + width, items.length);
      const right = Math.min(left + 2 * width, items.length);
      let a = left;
      let b = middle;
      let out = left;
      while (a < middle || b < right) {
        if (b >= right || (a < middle && compare(source[a] as T, source[b] as T) <= 0)) {
          target[out++] = source[a++] as T;
        } else {
          target[out++] = source[b++] as T;
        }
        if (pacer.due() && !(await pacer.pause())) return false;
      }
    }
    [source, target] = [target, source];
  }
  if (source !== items) {
    for (let index = 0; index < items.length; index++) items[index] = source[index] as T;
  }
  return true;
}
