/**
 * A strict reader of the Prometheus text exposition format (version 0.0.4) for the metrics
 * tests: every line must be a `# HELP`, a `# TYPE` or a sample of a declared metric, with
 * well-formed names, label sets and values; anything else throws, naming the line.
 *
 * @module
 */

/** One sample line. */
export interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** What a text declares and holds. */
export interface Exposition {
  /** `# TYPE` of each metric family. */
  readonly types: ReadonlyMap<string, string>;
  /** Every sample, in order. */
  readonly samples: readonly Sample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);
const SUFFIXES = ["_bucket", "_sum", "_count", "_total", "_created"];

/** Reads `{a="b",c="d"}` from `text` at `at` (just after the `{`), returning the labels and the end. */
function readLabels(text: string, at: number, where: string): [Record<string, string>, number] {
  const labels: Record<string, string> = {};
  let i = at;
  while (text[i] !== "}") {
    const eq = text.indexOf("=", i);
    if (eq === -1) throw new SyntaxError(`${where}: label without "="`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new SyntaxError(`${where}: bad label name "${name}"`);
    if (text[eq + 1] !== '"') throw new SyntaxError(`${where}: label value not quoted`);
    let value = "";
    let j = eq + 2;
    for (;; j++) {
      const char = text[j];
      if (char === undefined) throw new SyntaxError(`${where}: unterminated label value`);
      if (char === '"') break;
      if (char === "\\") {
        const next = text[++j];
        if (next === "n") value += "\n";
        else if (next === "\\" || next === '"') value += next;
        else throw new SyntaxError(`${where}: bad escape "\\${next}"`);
      } else if (char === "\n") throw new SyntaxError(`${where}: newline in label value`);
      else value += char;
    }
    if (Object.hasOwn(labels, name)) throw new SyntaxError(`${where}: label "${name}" twice`);
    labels[name] = value;
    i = j + 1;
    if (text[i] === ",") i++;
    else if (text[i] !== "}") throw new SyntaxError(`${where}: expected "," or "}"`);
  }
  return [labels, i + 1];
}

/**
 * Parses a sample value: a float, `+Inf`, `-Inf` or `NaN`, the words in any case (as Prometheus
 * reads them: prom-client writes `Nan`).
 */
function readValue(text: string, where: string): number {
  const word = text.toLowerCase();
  if (word === "+inf" || word === "inf") return Infinity;
  if (word === "-inf") return -Infinity;
  if (word === "nan") return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) {
    throw new SyntaxError(`${where}: bad value "${text}"`);
  }
  return Number(text);
}

/**
 * Parses an exposition, strictly.
 *
 * @param text The `/metrics` body
 * @returns Its types and samples
 * @throws {SyntaxError} At the first line that is not well-formed
 */
export function parseExposition(text: string): Exposition {
  if (!text.endsWith("\n")) throw new SyntaxError("the text does not end with a newline");
  const types = new Map<string, string>();
  const helped = new Set<string>();
  const samples: Sample[] = [];
  const lines = text.slice(0, -1).split("\n");
  lines.forEach((line, index) => {
    const where = `line ${index + 1} (${JSON.stringify(line.slice(0, 80))})`;
    if (line === "") return;
    if (line.startsWith("#")) {
      const match = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      if (!match) throw new SyntaxError(`${where}: a comment that is not HELP or TYPE`);
      const [, kind, name, rest] = match as unknown as [string, string, string, string];
      if (!NAME.test(name)) throw new SyntaxError(`${where}: bad metric name`);
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new SyntaxError(`${where}: unknown type "${rest}"`);
        if (types.has(name)) throw new SyntaxError(`${where}: TYPE given twice`);
        types.set(name, rest);
      } else {
        if (helped.has(name)) throw new SyntaxError(`${where}: HELP given twice`);
        helped.add(name);
      }
      return;
    }
    const brace = line.indexOf("{");
    const space = line.indexOf(" ");
    const nameEnd = brace !== -1 && (space === -1 || brace < space) ? brace : space;
    if (nameEnd <= 0) throw new SyntaxError(`${where}: no value`);
    const name = line.slice(0, nameEnd);
    if (!NAME.test(name)) throw new SyntaxError(`${where}: bad metric name "${name}"`);
    let labels: Record<string, string> = {};
    let rest = nameEnd;
    if (line[nameEnd] === "{") [labels, rest] = readLabels(line, nameEnd + 1, where);
    if (line[rest] !== " ") throw new SyntaxError(`${where}: expected a space before the value`);
    const fields = line.slice(rest + 1).split(" ");
    if (fields.length > 2 || (fields[1] !== undefined && !/^-?\d+$/.test(fields[1]))) {
      throw new SyntaxError(`${where}: bad value or timestamp`);
    }
    const family = types.has(name)
      ? name
      : SUFFIXES.map((suffix) => name.endsWith(suffix) ? name.slice(0, -suffix.length) : "")
        .find((base) => base !== "" && types.has(base));
    if (family === undefined) throw new SyntaxError(`${where}: sample of no declared metric`);
    samples.push({ name, labels, value: readValue(fields[0] as string, where) });
  });
  return { types, samples };
}

/**
 * The value of the one sample of `name` whose labels include `labels`, or the sum over every
 * matching sample; 0 when none matches.
 *
 * @param exposition The parsed text
 * @param name The sample name
 * @param labels Labels the samples must have
 * @returns The sum of the matching values
 */
export function sampleSum(
  exposition: Exposition,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number {
  return exposition.samples
    .filter((sample) =>
      sample.name === name &&
      Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
    )
    .reduce((sum, sample) => sum + sample.value, 0);
}
