/**
 * `deno task test`'s runner: `deno test` with its arguments, under a per-run temp root.
 *
 * Every temporary directory the tests make goes under one root (`ACP_HARNESS_TEST_TMP`, read by
 * `tests/_helpers/temp_dir.ts`), which this script removes when the run ends: also when a test
 * was killed by its timeout before its `await using` could clean up, and when the run itself is
 * interrupted (SIGINT, SIGTERM are passed on to `deno test`, and the root goes once it exited).
 *
 * Usage: `deno run -A scripts/run_tests.ts <deno test arguments>`.
 *
 * @module
 */
import { tempRun } from "../tests/_helpers/temp_dir.ts";
import { printError } from "../tests/_helpers/print.ts";

const SIGNALS: readonly Deno.Signal[] = ["SIGINT", "SIGTERM"];

/**
 * Runs `deno test` with `args` under a fresh temp root and removes the root afterwards.
 *
 * @param args The arguments after `deno test`
 * @returns The exit code of `deno test`
 */
async function runTests(args: readonly string[]): Promise<number> {
  await using run = await tempRun("acp-harness-test-run-");
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", ...args],
    env: run.env,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const forward = (signal: Deno.Signal) => (): void => {
    try {
      child.kill(signal);
    } catch {
      // It has exited already.
    }
  };
  const listeners = SIGNALS.map((signal) => [signal, forward(signal)] as const);
  for (const [signal, listener] of listeners) Deno.addSignalListener(signal, listener);
  try {
    const status = await child.status;
    return status.code;
  } finally {
    for (const [signal, listener] of listeners) Deno.removeSignalListener(signal, listener);
  }
}

if (import.meta.main) {
  const code = await runTests(Deno.args).catch((error: unknown) => {
    printError(`run_tests: ${error instanceof Error ? error.message : String(error)}`);
    return 1;
  });
  Deno.exit(code);
}
