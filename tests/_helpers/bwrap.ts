/**
 * Whether the tests can use bubblewrap (the command sandbox, issue 29): probed once per test
 * file, with the binary `ACP_HARNESS_BWRAP` names (else `bwrap`). Without it the sandbox tests
 * are skipped with one loud line on a developer machine, and fail in CI (`CI=true`): they never
 * skip there (`.ci/run` installs bubblewrap).
 *
 * @module
 */
import { printError } from "./print.ts";

const SKIPPED =
  "Sandbox tests SKIPPED: bubblewrap does not work here (apt-get install bubblewrap, or set ACP_HARNESS_BWRAP)";

/** Set once the skip was announced: the environment is shared by the test files of one run. */
const ANNOUNCED = "ACP_HARNESS_TEST_BWRAP_SKIP_ANNOUNCED";

/** The bubblewrap binary the tests use. */
export const BWRAP: string = Deno.env.get("ACP_HARNESS_BWRAP") || "bwrap";

function probe(): boolean {
  try {
    const { code } = new Deno.Command(BWRAP, {
      args: ["--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "--", "true"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return code === 0;
  } catch {
    return false;
  }
}

/**
 * Whether bubblewrap works here; in CI without it this throws, so the test file fails to load
 * instead of skipping.
 *
 * @returns `true`, or `false` after the loud line
 */
export function bwrapAvailable(): boolean {
  if (probe()) return true;
  if (Deno.env.get("CI") === "true") {
    throw new Error(
      "bubblewrap does not work: in CI the sandbox tests must run, never skip (.ci/run installs it)",
    );
  }
  if (Deno.env.get(ANNOUNCED) !== "1") {
    Deno.env.set(ANNOUNCED, "1");
    printError(`\n${"!".repeat(100)}\n${SKIPPED}\n${"!".repeat(100)}\n`);
  }
  return false;
}
