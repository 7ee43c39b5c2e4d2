/**
 * The house's own lint rules, run by `deno lint` (deno.json `lint.plugins`).
 *
 * - `house/function-size`: no function, method or arrow function in `src/`, `bench/` or
 *   `torture/` is longer than {@link MAX_FUNCTION_LINES} lines, counted from its first line to
 *   its last. A long function is where several concepts hide; split it into named steps. Tests
 *   are exempt: a test case that reads top to bottom is clearer than one cut into helpers.
 *
 * @module
 */

/** The most lines a function may span. */
export const MAX_FUNCTION_LINES = 150;

/** The folders of the repository the size rule holds for. */
const SIZED_FOLDERS: readonly string[] = ["src/", "bench/", "torture/"];

/** The repository's root, as a path with `/` separators and a trailing `/`. */
const ROOT = decodeURIComponent(new URL("../", import.meta.url).pathname);

/** The number of lines `text` spans between the offsets `start` and `end`. */
function linesBetween(text: string, start: number, end: number): number {
  let lines = 1;
  for (let at = text.indexOf("\n", start); at !== -1 && at < end; at = text.indexOf("\n", at + 1)) {
    lines++;
  }
  return lines;
}

/** Whether the size rule holds for `filename`: a file in one of the sized folders of `root`. */
export function isSized(filename: string, root: string = ROOT): boolean {
  const path = filename.replaceAll("\\", "/");
  if (!path.startsWith(root)) return false;
  const inside = path.slice(root.length);
  return SIZED_FOLDERS.some((folder) => inside.startsWith(folder));
}

const plugin: Deno.lint.Plugin = {
  name: "house",
  rules: {
    "function-size": {
      create(context): Deno.lint.LintVisitor {
        if (!isSized(context.filename)) return {};
        const text = context.sourceCode.text;
        function check(node: Deno.lint.Node): void {
          const lines = linesBetween(text, node.range[0], node.range[1]);
          if (lines <= MAX_FUNCTION_LINES) return;
          context.report({
            node,
            message: `This function spans ${lines} lines; the most is ${MAX_FUNCTION_LINES}.`,
            hint: "Split it into named steps, each a function of its own.",
          });
        }
        return {
          FunctionDeclaration: check,
          FunctionExpression: check,
          ArrowFunctionExpression: check,
        };
      },
    },
  },
};

export default plugin;
