/**
 * Whether the tests can run a real Prometheus server (the Debian package `prometheus`): probed
 * once per test file, with the binary `ACP_HARNESS_PROMETHEUS` names (else `prometheus`). Without
 * it the scrape test is skipped with one loud line on a developer machine, and fails in CI
 * (`CI=true`): it never skips there (`.ci/run` installs the package).
 *
 * @module
 */
import { missingDependency } from "./missing_dependency.ts";

const SKIPPED =
  "Prometheus scrape test SKIPPED: no prometheus here (apt-get install prometheus, or set ACP_HARNESS_PROMETHEUS)";

/** The Prometheus binary the tests use. */
export const PROMETHEUS: string = Deno.env.get("ACP_HARNESS_PROMETHEUS") || "prometheus";

function probe(): boolean {
  try {
    const { code } = new Deno.Command(PROMETHEUS, {
      args: ["--version"],
      stdout: "null",
      stderr: "null",
    }).outputSync();
    return code === 0;
  } catch {
    return false;
  }
}

/**
 * Whether Prometheus runs here; in CI without it this throws, so the test file fails to load
 * instead of skipping.
 *
 * @returns `true`, or `false` after the loud line
 */
export function prometheusAvailable(): boolean {
  return probe() || missingDependency({
    key: "PROMETHEUS",
    skipped: SKIPPED,
    inCi:
      "prometheus does not run: in CI the scrape test must run, never skip (.ci/run installs it)",
  });
}
