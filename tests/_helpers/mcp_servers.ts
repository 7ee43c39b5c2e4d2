/**
 * MCP servers for tests: command lines for stdio servers (the reference "everything" and
 * "filesystem" servers from the test clients' manifest, tests/clients/package.json, and the
 * dependency-free fake in tests/_fixtures/fake_mcp_server.mjs), the everything server over
 * Streamable HTTP or SSE on a free local port, and (by the kit's process hunter,
 * ./marked_processes.ts) the processes left behind.
 *
 * @module
 */
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, existsSync } from "node:fs";
import { readdir, readFile, readlink } from "node:fs/promises";
import { createServer } from "node:net";
import { delimiter, isAbsolute, join } from "node:path";
import process from "node:process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { findMarked, killAll } from "./marked_processes.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const MODULES = `${ROOT}tests/clients/node_modules/@modelcontextprotocol`;

/** The entry point of `@modelcontextprotocol/server-everything` (its `mcp-server-everything` bin). */
export const EVERYTHING_ENTRY: string = `${MODULES}/server-everything/dist/index.js`;

/** The entry point of `@modelcontextprotocol/server-filesystem` (its `mcp-server-filesystem` bin). */
export const FILESYSTEM_ENTRY: string = `${MODULES}/server-filesystem/dist/index.js`;

/** The fake stdio MCP server (see tests/_fixtures/fake_mcp_server.mjs for its flags and tools). */
export const FAKE_MCP_SERVER: string = `${ROOT}tests/_fixtures/fake_mcp_server.mjs`;

for (const entry of [EVERYTHING_ENTRY, FILESYSTEM_ENTRY]) {
  if (!existsSync(entry)) {
    throw new Error(`${entry} is missing: run \`npm install --prefix tests/clients\``);
  }
}

/** Finds `name` on PATH; returns its absolute path. */
function onPath(name: string): string {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!isAbsolute(dir)) continue;
    const candidate = join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  throw new Error(`Cannot find ${name} on PATH`);
}

/** The absolute path of the `node` binary (the first on PATH). */
export const NODE: string = onPath("node");

/** A stdio MCP server's command line: an absolute command and its arguments. */
export interface StdioCommand {
  /** The executable, an absolute path. */
  readonly command: string;
  /** Its arguments. */
  readonly args: string[];
}

/** The reference "everything" server over stdio. */
export function everythingStdio(): StdioCommand {
  return { command: NODE, args: [EVERYTHING_ENTRY, "stdio"] };
}

/**
 * The reference filesystem server over stdio.
 *
 * @param roots The directories it may touch (absolute paths)
 */
export function filesystemStdio(...roots: string[]): StdioCommand {
  return { command: NODE, args: [FILESYSTEM_ENTRY, ...roots] };
}

/**
 * The fake server over stdio, on Node.js.
 *
 * @param flags Its flags, e.g. `"--spawn-grandchild"`, `"--marker=abc"`, `"--die-after-calls=1"`
 */
export function fakeStdio(...flags: string[]): StdioCommand {
  return { command: NODE, args: [FAKE_MCP_SERVER, ...flags] };
}

/** A remote MCP server running as a child process; disposing of it closes it. */
export interface RemoteMcpServer extends AsyncDisposable {
  /** Where to connect: `http://127.0.0.1:PORT/mcp` (Streamable HTTP) or `…/sse` (SSE). */
  readonly url: string;
  /** Kills the server's process group and resolves once the server process has exited. */
  close(): Promise<void>;
  /** The server's pid, also its process group id. */
  readonly pid: number;
}

/** A port that was free a moment ago on 127.0.0.1. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address !== null ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The inodes of the TCP sockets (IPv4 or IPv6) listening on `port`. */
async function listeningInodes(port: number): Promise<Set<string>> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const inodes = new Set<string>();
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = await readFile(table, "utf8").catch(() => "");
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // local_address is ADDR:PORT; st 0A is LISTEN; field 9 is the inode.
      if (fields[1]?.endsWith(`:${hexPort}`) && fields[3] === "0A" && fields[9] !== undefined) {
        inodes.add(fields[9]);
      }
    }
  }
  return inodes;
}

/** Whether process `pid` holds a socket listening on `port`. */
async function listensOn(pid: number, port: number): Promise<boolean> {
  const inodes = await listeningInodes(port);
  for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "");
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode !== undefined && inodes.has(inode)) return true;
  }
  return false;
}

/** Kills the process group led by `child` (spawned detached) and waits until it has closed. */
async function killGroup(child: ChildProcess, closed: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // Gone meanwhile.
    }
  }
  await closed;
}

/** One attempt at starting the everything server on `port`; undefined when the port was taken. */
async function startOnce(
  mode: "streamableHttp" | "sse",
  port: number,
): Promise<RemoteMcpServer | undefined> {
  const child = spawn(NODE, [EVERYTHING_ENTRY, mode], {
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, PORT: String(port) },
  });
  const closed = new Promise<void>((resolve) => child.once("close", () => resolve()));
  const tail: string[] = [];
  // Both streams are read to their end, whatever the server logs, so it never blocks on a pipe.
  const outcome = new Promise<"ready" | "taken" | "exited">((resolve) => {
    const onLine = (line: string): void => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      if (/already in use|EADDRINUSE/.test(line)) resolve("taken");
      else if (new RegExp(`(listening|running) on port ${port}\\b`).test(line)) resolve("ready");
    };
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream, crlfDelay: Infinity }).on("line", onLine);
    }
    child.once("error", () => resolve("exited"));
    void closed.then(() => resolve("exited"));
  });
  const result = await outcome;
  // Both transports print their "listening"/"running" line from the callback express also calls
  // with a listen error, so the line alone does not prove the port is the server's: /proc does.
  const pid = child.pid;
  if (result === "ready" && pid !== undefined && await listensOn(pid, port)) {
    const close = (): Promise<void> => killGroup(child, closed);
    return {
      url: `http://127.0.0.1:${port}/${mode === "sse" ? "sse" : "mcp"}`,
      pid,
      close,
      [Symbol.asyncDispose]: close,
    };
  }
  await killGroup(child, closed);
  if (result === "exited" && !tail.some((line) => /already in use|EADDRINUSE/.test(line))) {
    throw new Error(
      `The everything server (${mode}) exited before listening on port ${port}:\n${
        tail.join("\n")
      }`,
    );
  }
  return undefined;
}

/**
 * Starts `@modelcontextprotocol/server-everything` over Streamable HTTP or SSE on a free port,
 * in its own process group, and resolves once it listens. The server binds all interfaces (it
 * passes no host to `listen`); tests connect to it on 127.0.0.1 only.
 *
 * @param mode The transport: `"streamableHttp"` serves `/mcp`, `"sse"` serves `/sse` (and takes
 *   messages at `/message?sessionId=…`)
 * @returns The server; `close()` (or `await using`) kills its process group
 */
export async function startEverythingRemote(
  mode: "streamableHttp" | "sse",
): Promise<RemoteMcpServer> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    const server = await startOnce(mode, await freePort());
    if (server !== undefined) return server;
  }
  throw new Error(`Cannot start the everything server (${mode}): 3 free ports were taken`);
}

/**
 * The live (non-zombie) processes, other than this one, whose command line or environment
 * contains `marker`: e.g. a fake server started with `--marker=…` and its grandchild, or any
 * process started with the marker in its environment and its descendants. These are usually
 * not our children, so nothing announces their end: poll this (tests/_helpers/wait.ts
 * `pollUntil`) or wait on their pids with `waitGone` from tests/host/_processes.ts.
 *
 * @param marker A string unique to the test, e.g. `crypto.randomUUID()`
 */
export async function processesWithMarker(marker: string): Promise<number[]> {
  return (await findMarked(marker)).map(({ pid }) => pid);
}

/**
 * Sends SIGKILL to every process {@link processesWithMarker} finds, so a failing test leaves
 * nothing behind; returns the pids it signalled.
 *
 * @param marker The test's marker
 */
export async function killProcessesWithMarker(marker: string): Promise<number[]> {
  const found = await findMarked(marker);
  killAll(found);
  return found.map(({ pid }) => pid);
}
