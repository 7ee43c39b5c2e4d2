/**
 * A load balancer run as a child process by the deployment tests (HAProxy, nginx): its log lines
 * (stdout and stderr, one entry a line), a wait for a line, and a stop that waits for its exit and
 * its output, leaving nothing behind.
 *
 * @module
 */

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
