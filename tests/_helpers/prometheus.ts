/**
 * Whether the tests can run a real Prometheus server (the Debian package `prometheus`): probed
 * once per test file, with the binary `ACP_HARNESS_PROMETHEUS` names (else `prometheus`). Without
 * it the scrape test is skipped with one loud line on a developer machine, and fails in CI
 * (`CI=true`): it never skips there (`.ci/run` installs the package).
 *
 * @module
 */
import { printError } from "./print.ts";

const SKIPPED =
  "Prometheus scrape test SKIPPED: no prometheus here (apt-get install prometheus, or set ACP_HARNESS_PROMETHEUS)";

/** Set once the skip was announced: the environment is shared by the test files of one run. */
const ANNOUNCED = "ACP_HARNESS_TEST_PROMETHEUS_SKIP_ANNOUNCED";

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
  if (probe()) return true;
  if (Deno.env.get("CI") === "true") {
    throw new Error(
      "prometheus does not run: in CI the scrape test must run, never skip (.ci/run installs it)",
    );
  }
  if (Deno.env.get(ANNOUNCED) !== "1") {
    Deno.env.set(ANNOUNCED, "1");
    printError(`\n${"!".repeat(100)}\n${SKIPPED}\n${"!".repeat(100)}\n`);
  }
  return false;
}
