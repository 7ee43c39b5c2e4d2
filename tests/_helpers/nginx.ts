/**
 * Starts a real nginx (the Debian package `nginx`) on `examples/deploy/nginx.conf` in front of
 * running instances, unprivileged in a temporary prefix: it renders the config's `${ACP_LISTEN}`
 * and `${ACP_SERVER_n}` placeholders (as the file says a user does with envsubst), runs `nginx -t`
 * on the result or the proxy itself in the foreground (`daemon off`, its pid file, error log and
 * temporary files in the prefix), waits until it answers `/health` through an instance, keeps its
 * log lines (one per request) and stops it on dispose, leaving nothing behind. Without nginx the
 * tests are skipped with one loud line on a developer machine, and fail in CI (`CI=true`):
 * `.ci/run` installs the package.
 *
 * @module
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  freePort,
  proxyAvailable,
  proxyBinary,
  type WatchedProxy,
  watchProxy,
} from "./proxy_process.ts";
import { tempDir } from "./temp_dir.ts";
import { pollUntil } from "./wait.ts";

const PROGRAM = { name: "nginx", envVar: "ACP_HARNESS_NGINX" };

/** The nginx binary the tests use ({@link proxyBinary}). */
export const NGINX: string = proxyBinary(PROGRAM);

/** The example config the tests run. */
export const NGINX_CONFIG: string = fileURLToPath(
  new URL("../../examples/deploy/nginx.conf", import.meta.url),
);

/**
 * Whether nginx runs here; in CI without it this throws, so the test file fails to load instead
 * of skipping.
 *
 * @returns `true`, or `false` after the loud line
 */
export function nginxAvailable(): boolean {
  return proxyAvailable(PROGRAM, NGINX);
}

/**
 * The example config with its placeholders filled, as `envsubst` with the four names does.
 *
 * @param values `ACP_LISTEN` and `ACP_SERVER_1`…`3`
 * @returns The config text
 * @throws {Error} When a placeholder has no value, or one is left over
 */
export async function renderNginxConfig(values: Readonly<Record<string, string>>): Promise<string> {
  const text = await readFile(NGINX_CONFIG, "utf8");
  const rendered = text.replace(/\$\{(ACP_[A-Z0-9_]+)\}/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`no value for \${${name}}`);
    return value;
  });
  // Outside comments, no `${` may be left: nginx would take it for a variable.
  const left = rendered.split("\n").filter((line) => !/^\s*#/.test(line) && line.includes("${"));
  if (left.length > 0) throw new Error(`placeholders left: ${left.join("; ")}`);
  return rendered;
}

/** A running nginx. */
export interface NginxProcess extends AsyncDisposable {
  /** `http://127.0.0.1:<port>`, the proxy's address. */
  readonly url: string;
  /** The master process's pid (its workers are its children). */
  readonly pid: number;
  /** Its log lines so far (one per request, on stdout; errors on stderr). */
  readonly logs: readonly string[];
  /** Resolves with the first log line from index `from` on (so far or later) that matches. */
  waitForLog(pattern: RegExp, from?: number): Promise<string>;
  /** Stops it (SIGTERM: nginx's fast shutdown) and waits for its exit. */
  stop(): Promise<void>;
}

/** The arguments that keep nginx in `prefix`: its config, its error log, its pid file. */
function nginxArgs(prefix: string, config: string): string[] {
  return [
    "-p",
    prefix,
    "-c",
    config,
    "-e",
    join(prefix, "error.log"),
    "-g",
    `daemon off; pid ${join(prefix, "nginx.pid")};`,
  ];
}

/**
 * Renders the config into a temporary prefix and runs `nginx -t` on it.
 *
 * @param values `ACP_LISTEN` and `ACP_SERVER_1`…`3`
 * @returns Its exit code and output
 */
export async function checkNginxConfig(
  values: Readonly<Record<string, string>>,
): Promise<{ code: number; output: string }> {
  await using dir = await tempDir("acp-harness-nginx-");
  const config = join(dir.path, "nginx.conf");
  await writeFile(config, await renderNginxConfig(values));
  const { code, stdout, stderr } = await new Deno.Command(NGINX, {
    args: ["-t", ...nginxArgs(dir.path, config)],
    stdin: "null",
  }).output();
  const decode = (bytes: Uint8Array): string => new TextDecoder().decode(bytes);
  return { code, output: decode(stdout) + decode(stderr) };
}

/**
 * Starts nginx on the example config in front of `servers` (three of them).
 *
 * @param servers The instances' addresses (`127.0.0.1:7341`), or their `http://` URLs
 * @returns The running proxy, once a `/health` through it answered 200
 */
export async function startNginx(servers: readonly string[]): Promise<NginxProcess> {
  if (servers.length !== 3) throw new Error("The example config has three servers");
  const port = freePort();
  const values: Record<string, string> = { ACP_LISTEN: `127.0.0.1:${port}` };
  servers.forEach((server, i) =>
    values[`ACP_SERVER_${i + 1}`] = server.replace(/^https?:\/\//, "")
  );
  const dir = await tempDir("acp-harness-nginx-");
  let watched: WatchedProxy | undefined;
  const stop = async (): Promise<void> => {
    try {
      await watched?.stop();
    } finally {
      await dir[Symbol.asyncDispose]();
    }
  };
  const url = `http://127.0.0.1:${port}`;
  try {
    const config = join(dir.path, "nginx.conf");
    await writeFile(config, await renderNginxConfig(values));
    const child = new Deno.Command(NGINX, {
      args: nginxArgs(dir.path, config),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const running = watchProxy(child, "nginx");
    watched = running;
    // Nothing signals "listening", so poll the proxy's /health (a bound, not a wait).
    await pollUntil(async () => {
      if (running.exited) throw new Error(`nginx exited:\n${running.logs.join("\n")}`);
      try {
        const response = await fetch(`${url}/health`);
        await response.body?.cancel();
        return response.status === 200;
      } catch {
        return false;
      }
    }, { what: "nginx answering /health" });
    return {
      url,
      pid: child.pid,
      logs: running.logs,
      waitForLog: running.waitForLog,
      stop,
      [Symbol.asyncDispose]: stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}
