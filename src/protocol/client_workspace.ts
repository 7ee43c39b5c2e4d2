import { type AgentContext, methods } from "@agentclientprotocol/sdk";
import type {
  CommandResult,
  RunCommandOptions,
  Workspace,
  WorkspaceOptions,
} from "../tools/workspace.ts";
import type { ClientCapabilities } from "../transport/acp_types.ts";

/**
 * File and command access that goes through the ACP client where it offers it
 * (`fs/read_text_file`, `fs/write_text_file`, `terminal/*`), so the client sees unsaved editor
 * buffers, records edits and shows commands in its own terminals; everything else falls back to
 * the host. Every terminal created is released.
 */
export class ClientWorkspace implements Workspace {
  readonly #client: AgentContext;
  readonly #capabilities: ClientCapabilities;
  readonly #sessionId: string;
  readonly #fallback: Workspace;

  /**
   * @param client The connection's client context
   * @param capabilities What the client advertised at initialize
   * @param sessionId The session the calls belong to
   * @param fallback The host workspace, for what the client does not offer
   */
  constructor(
    client: AgentContext,
    capabilities: ClientCapabilities,
    sessionId: string,
    fallback: Workspace,
  ) {
    this.#client = client;
    this.#capabilities = capabilities;
    this.#sessionId = sessionId;
    this.#fallback = fallback;
  }

  /** Reads through `fs/read_text_file` when offered. */
  async readTextFile(path: string, options: WorkspaceOptions): Promise<string> {
    if (!this.#capabilities.fs?.readTextFile) return this.#fallback.readTextFile(path, options);
    const result = await this.#client.request(
      methods.client.fs.readTextFile,
      { sessionId: this.#sessionId, path },
      { cancellationSignal: options.signal, stopWaitingOnCancel: true },
    ).catch(rethrowClientError);
    return result.content;
  }

  /** Writes through `fs/write_text_file` when offered. */
  async writeTextFile(path: string, content: string, options: WorkspaceOptions): Promise<void> {
    if (!this.#capabilities.fs?.writeTextFile) {
      return this.#fallback.writeTextFile(path, content, options);
    }
    await this.#client.request(
      methods.client.fs.writeTextFile,
      { sessionId: this.#sessionId, path, content },
      { cancellationSignal: options.signal, stopWaitingOnCancel: true },
    ).catch(rethrowClientError);
  }

  /** Runs in a client terminal when offered; kills it on timeout or abort; always releases it. */
  async runCommand(command: string, options: RunCommandOptions): Promise<CommandResult> {
    if (!this.#capabilities.terminal) return this.#fallback.runCommand(command, options);
    const terminal = await this.#client.createTerminal({
      sessionId: this.#sessionId,
      // Sandboxed: the client runs the sandbox's argv (bubblewrap on its machine).
      command: options.argv?.program ?? "/bin/sh",
      args: options.argv ? [...options.argv.args] : ["-c", command],
      cwd: options.cwd,
      outputByteLimit: options.outputLimit,
    }, { cancellationSignal: options.signal, stopWaitingOnCancel: true }).catch(rethrowClientError);
    let timedOut = false;
    const stop = new AbortController();
    const timer = setTimeout(() => {
      timedOut = true;
      stop.abort();
    }, options.timeoutMs);
    const onAbort = (): void => stop.abort();
    options.signal.addEventListener("abort", onAbort, { once: true });
    try {
      const exited = terminal.waitForExit();
      exited.catch(() => {});
      const stopped = new Promise<void>((resolve) => {
        if (stop.signal.aborted) resolve();
        stop.signal.addEventListener("abort", () => resolve(), { once: true });
      });
      const winner = await Promise.race([exited, stopped.then(() => undefined)]);
      if (winner === undefined) await terminal.kill().catch(() => {});
      const output = await terminal.currentOutput();
      const status = winner ?? output.exitStatus ?? {};
      return {
        output: output.output,
        truncated: output.truncated,
        exitCode: status.exitCode ?? null,
        signal: status.signal ?? null,
        timedOut,
        terminalId: terminal.id,
      };
    } finally {
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      await terminal.release().catch(() => {});
    }
  }
}

/** A failure the client reported, with the client's own reason in the message. */
export class ClientRequestError extends Error {
  /** The JSON-RPC error code the client answered with. */
  readonly code: number;

  /**
   * @param code The client's error code
   * @param message The client's reason
   */
  constructor(code: number, message: string) {
    super(message);
    this.name = "ClientRequestError";
    this.code = code;
  }
}

/**
 * Turns a client's error answer into an error whose message carries the client's reason: the
 * SDK puts a handler's message in `data.details` and answers `Internal error`, which alone tells
 * the model and the user nothing.
 */
function rethrowClientError(error: unknown): never {
  const answer = error as { code?: unknown; message?: unknown; data?: unknown } | null;
  if (
    typeof answer !== "object" || answer === null || typeof answer.code !== "number" ||
    typeof answer.message !== "string"
  ) {
    throw error;
  }
  const data = answer.data as Record<string, unknown> | string | null | undefined;
  const detail = typeof data === "string"
    ? data
    : [data?.details, data?.message, data?.reason].find((value) => typeof value === "string");
  const reason = typeof detail === "string" && detail.trim() !== "" && detail !== answer.message
    ? `${answer.message}: ${detail}`
    : answer.message;
  throw new ClientRequestError(answer.code, `${reason} (client error ${answer.code})`);
}
