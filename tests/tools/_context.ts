/**
 * Test helpers for tools: a real temporary workspace with a sibling "outside" directory, a host
 * and a workspace that record what they were asked to do.
 *
 * @module
 */
import type { Host } from "../../src/host/host.ts";
import { NodeHost } from "../../src/host/node_host.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import type { ToolContext } from "../../src/tools/tool.ts";
import type { Workspace } from "../../src/tools/workspace.ts";
import { makeTempDir, removeTempDir } from "../_helpers/temp_dir.ts";

/** Host methods that read or change file contents or run processes. */
const RECORDED_HOST_METHODS = new Set([
  "readFile",
  "readTextFile",
  "writeFileAtomic",
  "mkdir",
  "remove",
  "spawn",
]);

/** A temporary directory tree for one test; `await using` removes it. */
export interface TempWorkspace extends AsyncDisposable {
  /** The workspace root and session cwd (canonical). */
  readonly root: string;
  /** A sibling directory outside the workspace, holding `secret.txt`. */
  readonly outside: string;
  /** Host and workspace calls that read or wrote contents or ran something, e.g. `readTextFile /x`. */
  readonly calls: string[];
  /** A tool context on the real host; `signal` defaults to one that never aborts. */
  context(options?: { signal?: AbortSignal; cwd?: string; roots?: readonly string[] }): ToolContext;
  /** Writes a file under the root (parents created) and returns its absolute path. */
  write(relative: string, content: string | Uint8Array): Promise<string>;
  /** Reads a file under the root. */
  read(relative: string): Promise<string>;
}

/** Creates `<tmp>/work` (the root) and `<tmp>/outside/secret.txt`. */
export async function tempWorkspace(): Promise<TempWorkspace> {
  const base = await makeTempDir("acp-tools-");
  const root = `${base}/work`;
  const outside = `${base}/outside`;
  await Deno.mkdir(root);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(`${outside}/secret.txt`, "top secret\n");
  const calls: string[] = [];
  const hostWorkspace = new HostWorkspace(recordingHost(new NodeHost(), calls));
  const workspace = recordingWorkspace(hostWorkspace, calls);
  return {
    root,
    outside,
    calls,
    context(options = {}): ToolContext {
      return {
        sessionId: "test",
        cwd: options.cwd ?? root,
        roots: options.roots ?? [root],
        workspace,
        files: hostWorkspace,
        signal: options.signal ?? new AbortController().signal,
      };
    },
    async write(relative: string, content: string | Uint8Array): Promise<string> {
      const path = `${root}/${relative}`;
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      if (typeof content === "string") await Deno.writeTextFile(path, content);
      else await Deno.writeFile(path, content);
      return path;
    },
    read(relative: string): Promise<string> {
      return Deno.readTextFile(`${root}/${relative}`);
    },
    async [Symbol.asyncDispose](): Promise<void> {
      await removeTempDir(base);
    },
  };
}

function recordingHost(host: Host, calls: string[]): Host {
  return new Proxy(host, {
    get(target, property, receiver): unknown {
      const value = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]): unknown => {
        if (typeof property === "string" && RECORDED_HOST_METHODS.has(property)) {
          calls.push(`host.${property} ${String(args[0])}`);
        }
        return value.apply(target, args);
      };
    },
  });
}

function recordingWorkspace(workspace: Workspace, calls: string[]): Workspace {
  return {
    readTextFile(path, options): Promise<string> {
      calls.push(`workspace.readTextFile ${path}`);
      return workspace.readTextFile(path, options);
    },
    writeTextFile(path, content, options): Promise<void> {
      calls.push(`workspace.writeTextFile ${path}`);
      return workspace.writeTextFile(path, content, options);
    },
    runCommand(command, options) {
      calls.push(`workspace.runCommand ${options.cwd}`);
      return workspace.runCommand(command, options);
    },
  };
}
