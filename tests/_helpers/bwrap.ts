/**
 * Whether the tests can use bubblewrap (the command sandbox, issue 29): probed once per test
 * file, with the binary `ACP_HARNESS_BWRAP` names (else `bwrap`). Without it the sandbox tests
 * are skipped with one loud line on a developer machine, and fail in CI (`CI=true`): they never
 * skip there (`.ci/run` installs bubblewrap).
 *
 * @module
 */
import { missingDependency } from "./missing_dependency.ts";

const SKIPPED =
  "Sandbox tests SKIPPED: bubblewrap does not work here (apt-get install bubblewrap, or set ACP_HARNESS_BWRAP)";

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
  return probe() || missingDependency({
    key: "BWRAP",
    skipped: SKIPPED,
    inCi:
      "bubblewrap does not work: in CI the sandbox tests must run, never skip (.ci/run installs it)",
  });
}
