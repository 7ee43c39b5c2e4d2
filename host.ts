/**
 * The host of acp-harness: the {@link Host} interface through which the server reaches the
 * operating system (files, durable files, processes, environment, clock), and {@link NodeHost},
 * its implementation on the `node:` built-ins that Deno, Node.js and Bun all provide. A server
 * needs one host (`createAgentServer({ host })`); a host of your own can confine, record or fake
 * what the server does.
 *
 * @example Reading a file through the host
 * ```ts
 * import assert from "node:assert/strict";
 * import { type Host, NodeHost } from "./host.ts";
 *
 * const host: Host = new NodeHost();
 * const dir = await Deno.makeTempDir();
 * try {
 *   await host.writeFileAtomic(`${dir}/note.txt`, "hello");
 *   assert.equal(await host.readTextFile(`${dir}/note.txt`), "hello");
 * } finally {
 *   await Deno.remove(dir, { recursive: true });
 * }
 * ```
 *
 * @module
 */
export type {
  AppendFileOptions,
  AppendFileSyncOptions,
  DirEntry,
  FileIdentity,
  FileInfo,
  Host,
  HostClock,
  HostDurableFiles,
  HostEnvironment,
  HostFiles,
  HostOptions,
  HostProcess,
  HostProcesses,
  PipedHostProcess,
  ProbeResult,
  SpawnOptions,
  SuperviseOptions,
  SyncOptions,
} from "./src/host/host.ts";
export { NodeHost } from "./src/host/node_host.ts";
