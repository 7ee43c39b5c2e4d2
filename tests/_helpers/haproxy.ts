/**
 * Starts a real HAProxy (the Debian package `haproxy`) on `examples/deploy/haproxy.cfg`, unchanged,
 * in front of running instances: it fills the config's `${ACP_LISTEN}` and `${ACP_SERVER_n}` from
 * the environment, waits until the proxy answers `/health` through an instance, keeps its log lines
 * (one per request, and the servers' state changes) and stops it on dispose, leaving nothing
 * behind. Without haproxy the tests are skipped with one loud line on a developer machine, and fail
 * in CI (`CI=true`): `.ci/run` installs the package.
 *
 * @module
 */
import { fileURLToPath } from "node:url";
import { freePort, proxyAvailable, proxyBinary, watchProxy } from "./proxy_process.ts";
import { pollUntil } from "./wait.ts";

const PROGRAM = { name: "haproxy", envVar: "ACP_HARNESS_HAPROXY" };

/** The HAProxy binary the tests use ({@link proxyBinary}). */
export const HAPROXY: string = proxyBinary(PROGRAM);

/** The example config the tests run. */
export const HAPROXY_CONFIG: string = fileURLToPath(
  new URL("../../examples/deploy/haproxy.cfg", import.meta.url),
);

/**
 * Whether HAProxy runs here; in CI without it this throws, so the test file fails to load instead
 * of skipping.
 *
 * @returns `true`, or `false` after the loud line
 */
export function haproxyAvailable(): boolean {
  return proxyAvailable(PROGRAM, HAPROXY);
}

/** A running HAProxy. */
export interface HaproxyProcess extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`, the proxy's address. */
  readonly url: string;
  /** Its log lines so far (requests and server state changes). */
  readonly logs: readonly string[];
  /** Resolves with the first log line from index `from` on (so far or later) that matches. */
  waitForLog(pattern: RegExp, from?: number): Promise<string>;
  /** Stops it and waits for its exit. */
  stop(): Promise<void>;
}

/**
 * Starts HAProxy on the example config in front of `servers` (`host:port` each, three of them).
 *
 * @param servers The instances' addresses (`127.0.0.1:7341`), or their `http://` URLs
 * @returns The running proxy, once a `/health` through it answered 200
 */
export async function startHaproxy(servers: readonly string[]): Promise<HaproxyProcess> {
  if (servers.length !== 3) throw new Error("The example config has three servers");
  const port = freePort();
  const env: Record<string, string> = { ACP_LISTEN: `127.0.0.1:${port}` };
  servers.forEach((server, i) => env[`ACP_SERVER_${i + 1}`] = server.replace(/^https?:\/\//, ""));
  const child = new Deno.Command(HAPROXY, {
    args: ["-db", "-f", HAPROXY_CONFIG],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const watched = watchProxy(child, "haproxy");
  const { logs, waitForLog, stop } = watched;
  const url = `http://127.0.0.1:${port}`;
  try {
    // Nothing signals "listening" on stderr, so poll the proxy's /health (a bound, not a wait).
    await pollUntil(async () => {
      if (watched.exited) throw new Error(`haproxy exited:\n${logs.join("\n")}`);
      try {
        const response = await fetch(`${url}/health`);
        await response.body?.cancel();
        return response.status === 200;
      } catch {
        return false;
      }
    }, { what: "haproxy answering /health" });
  } catch (error) {
    await stop();
    throw error;
  }
  return { url, logs, waitForLog, stop, [Symbol.asyncDispose]: stop };
}
