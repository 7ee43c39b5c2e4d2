/**
 * The README is a front door and `docs/` holds the reference: the README stays short, and every
 * relative link in README.md and docs/*.md resolves, to a file and, for `#anchor` links, to a
 * heading (or an `<a id>`) of that file as GitHub renders its anchors.
 *
 * @module
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

/** The most lines the README may have. */
const README_MAX_LINES = 520;

/** The checkout, ending with a slash. */
const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** The Markdown files whose links are checked: README.md and every docs/*.md. */
function markdownFiles(): string[] {
  const docs = readdirSync(join(ROOT, "docs")).filter((name) => name.endsWith(".md")).sort();
  return [join(ROOT, "README.md"), ...docs.map((name) => join(ROOT, "docs", name))];
}

/** The lines of `markdown` outside fenced code blocks. */
function proseLines(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    else if (!fenced) lines.push(line);
  }
  return lines;
}

/**
 * GitHub's anchor of a heading: lowercase, punctuation dropped except `-` and `_`, each space a
 * `-`.
 *
 * @example
 * ```ts
 * headingSlug("Long sessions: context, compaction and commands");
 * // "long-sessions-context-compaction-and-commands"
 * ```
 */
export function headingSlug(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\- _]/gu, "").replaceAll(" ", "-");
}

/** The anchors of `markdown`: its headings' slugs (a repeated one gets `-1`, `-2`, …) and ids. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of proseLines(markdown)) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading) {
      const slug = headingSlug(heading[1] ?? "");
      const count = seen.get(slug) ?? 0;
      seen.set(slug, count + 1);
      anchors.add(count === 0 ? slug : `${slug}-${count}`);
    }
    for (const id of line.matchAll(/<a id="([^"]+)"><\/a>/g)) anchors.add(id[1] ?? "");
  }
  return anchors;
}

/** The relative link targets of `markdown` (outside code blocks and inline code). */
function relativeLinks(markdown: string): string[] {
  const targets: string[] = [];
  for (const line of proseLines(markdown)) {
    for (const link of line.replace(/`[^`]*`/g, "").matchAll(/\]\(([^)\s]+)\)/g)) {
      const target = link[1] ?? "";
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target)) targets.push(target);
    }
  }
  return targets;
}

Deno.test("README.md stays a front door: at most 520 lines", () => {
  const lines = readFileSync(join(ROOT, "README.md"), "utf8").trimEnd().split("\n").length;
  assert.ok(lines <= README_MAX_LINES, `README.md has ${lines} lines`);
});

Deno.test("every relative link in README.md and docs/*.md resolves to a file and its anchor", () => {
  const broken: string[] = [];
  for (const file of markdownFiles()) {
    const markdown = readFileSync(file, "utf8");
    for (const target of relativeLinks(markdown)) {
      const [path = "", anchor] = target.split("#", 2);
      const resolved = path === "" ? file : join(dirname(file), decodeURIComponent(path));
      const where = `${relative(ROOT, file)}: ${target}`;
      if (!existsSync(resolved)) {
        broken.push(`${where} (no such file)`);
      } else if (anchor !== undefined) {
        const text = resolved === file ? markdown : readFileSync(resolved, "utf8");
        if (!resolved.endsWith(".md") || !anchorsOf(text).has(anchor)) {
          broken.push(`${where} (no such anchor)`);
        }
      }
    }
  }
  assert.deepEqual(broken, []);
});

Deno.test("`headingSlug()` follows GitHub's rules", () => {
  assert.equal(headingSlug("`/acp`: the RFD shape"), "acp-the-rfd-shape");
  assert.equal(
    headingSlug("`/v1/acp/:id`: the `acp-http-client` shape"),
    "v1acpid-the-acp-http-client-shape",
  );
  assert.equal(
    headingSlug("Config file: providers and model facts"),
    "config-file-providers-and-model-facts",
  );
  assert.equal(headingSlug("snake_case and-dash"), "snake_case-and-dash");
});
