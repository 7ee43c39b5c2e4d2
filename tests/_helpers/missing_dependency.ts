/**
 * What a test file does when something it needs outside the repository (bubblewrap, Prometheus,
 * a PostgreSQL server) is not there: in CI (`CI=true`) it fails, never skips (`.ci/run` provides
 * each); on a developer machine the tests are skipped with one loud line on stderr, announced once
 * per test run (the environment is shared by its test files).
 *
 * @example
 * ```ts ignore
 * const available = probe() || missingDependency({ key: "FOO", skipped: "Foo tests SKIPPED", inCi: "foo missing" });
 * ```
 *
 * @module
 */
import { printError } from "./print.ts";

/** What {@link missingDependency} says. */
export interface MissingDependency {
  /** Names the environment variable that marks the skip as announced (`ACP_HARNESS_TEST_<key>_SKIP_ANNOUNCED`). */
  readonly key: string;
  /** The loud line of a skip. */
  readonly skipped: string;
  /** The error in CI. */
  readonly inCi: string;
}

/**
 * Fails in CI, else announces the skip once.
 *
 * @param missing What is missing and what to say
 * @returns `false` (the tests are skipped)
 * @throws {Error} In CI
 */
export function missingDependency(missing: MissingDependency): false {
  if (Deno.env.get("CI") === "true") throw new Error(missing.inCi);
  const announced = `ACP_HARNESS_TEST_${missing.key}_SKIP_ANNOUNCED`;
  if (Deno.env.get(announced) !== "1") {
    Deno.env.set(announced, "1");
    printError(`\n${"!".repeat(100)}\n${missing.skipped}\n${"!".repeat(100)}\n`);
  }
  return false;
}
