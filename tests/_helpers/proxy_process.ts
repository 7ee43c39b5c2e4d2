/**
 * A load balancer run as a child process by the deployment tests (HAProxy, nginx): its log lines
 * (stdout and stderr, one entry a line), a wait for a line, and a stop that waits for its exit and
 * its output, leaving nothing behind; where its binary is, whether it runs here, and a free port to
 * put it on.
 *
 * @module
 */
import { existsSync } from "node:fs";
import { missingDependency } from "./missing_dependency.ts";

/** A load balancer the deployment tests run: its program's name and the Debian package's. */
export interface ProxyProgram {
  /** The program (`haproxy`, `nginx`). */
  readonly name: string;
  /** The environment variable that names another binary (`ACP_HARNESS_HAPROXY`). */
  readonly envVar: string;
}

/**
 * The binary a test runs: the one `envVar` names, else Debian's `/usr/sbin/<name>` (a user's PATH
 * may lack `/usr/sbin`), else `<name>` on PATH.
 *
 * @param program The program
 * @returns Its path or name
 */
export function proxyBinary(program: ProxyProgram): string {
  const sbin = `/usr/sbin/${program.name}`;
  return Deno.env.get(program.envVar) || (existsSync(sbin) ? sbin : program.name);
}

/**
 * Whether the binary runs here (`-v` exits 0); in CI without it this throws, so the test file fails
 * to load instead of skipping.
 *
 * @param program The program
 * @param binary Its binary ({@link proxyBinary})
 * @returns `true`, or `false` after the loud line
 */
export function proxyAvailable(program: ProxyProgram, binary: string): boolean {
  let ok = false;
  try {
    ok = new Deno.Command(binary, { args: ["-v"], stdout: "null", stderr: "null" })
      .outputSync().code === 0;
  } catch {
    ok = false;
  }
  return ok || missingDependency({
    key: program.name.toUpperCase(),
    skipped: `${program.name} tests SKIPPED: no ${program.name} here ` +
      `(apt-get install ${program.name}, or set ${program.envVar})`,
    inCi: `${program.name} does not run: in CI the load-balancer tests must run, never skip ` +
      "(.ci/run installs it)",
  });
}

/**
 * A port free on 127.0.0.1 just now (bound and released), for a proxy that binds it itself.
 *
 * @returns The port
 */
export function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** A running proxy's process, watched. */
export interface WatchedProxy {
  /** Its log lines so far. */
  readonly logs: readonly string[];
  /** Whether it has exited. */
  readonly exited: boolean;
  /** Resolves with the first log line from index `from` on (so far or later) that matches. */
  waitForLog(pattern: RegExp, from?: number): Promise<string>;
  /** SIGTERM (unless it has exited), then waits for its exit and the end of its output. */
  stop(): Promise<void>;
}

/**
 * Watches a proxy spawned with piped stdout and stderr.
 *
 * @param child The process
 * @param name Its name, for errors
 * @returns The watcher
 */
export function watchProxy(child: Deno.ChildProcess, name: string): WatchedProxy {
  const logs: string[] = [];
  const waiters = new Set<() => void>();
  const wake = (): void => {
    for (const waiter of [...waiters]) waiter();
  };
  const read = async (stream: ReadableStream<Uint8Array>): Promise<void> => {
    let rest = "";
    for await (const text of stream.pipeThrough(new TextDecoderStream())) {
      const lines = (rest + text).split("\n");
      rest = lines.pop() ?? "";
      logs.push(...lines.filter((line) => line !== ""));
      wake();
    }
    if (rest !== "") logs.push(rest);
    wake();
  };
  const reading = Promise.all([read(child.stdout), read(child.stderr)]);
  let exited = false;
  const status = child.status.then((s) => {
    exited = true;
    wake();
    return s;
  });
  return {
    logs,
    get exited() {
      return exited;
    },
    waitForLog: (pattern, from = 0) =>
      new Promise((resolve, reject) => {
        const check = (): void => {
          const line = logs.slice(from).find((l) => pattern.test(l));
          if (line !== undefined) {
            waiters.delete(check);
            resolve(line);
          } else if (exited) {
            waiters.delete(check);
            reject(new Error(`${name} exited before logging ${pattern}:\n${logs.join("\n")}`));
          }
        };
        waiters.add(check);
        check();
      }),
    async stop() {
      if (!exited) {
        try {
          child.kill("SIGTERM");
        } catch { /* already gone */ }
      }
      await status;
      await reading;
    },
  };
}
