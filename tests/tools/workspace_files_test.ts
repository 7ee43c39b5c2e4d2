import assert from "node:assert/strict";
import { NodeHost } from "../../src/host/node_host.ts";
import { editFileTool } from "../../src/tools/edit_file.ts";
import { findFilesTool } from "../../src/tools/find_files.ts";
import { HostWorkspace } from "../../src/tools/host_workspace.ts";
import { listDirectoryTool } from "../../src/tools/list_directory.ts";
import { readFileTool } from "../../src/tools/read_file.ts";
import { runCommandTool } from "../../src/tools/run_command.ts";
import { searchTextTool } from "../../src/tools/search_text.ts";
import type { Tool } from "../../src/tools/tool.ts";
import type { WorkspaceFiles } from "../../src/tools/workspace.ts";
import { writeFileTool } from "../../src/tools/write_file.ts";
import { tempWorkspace } from "./_context.ts";

/** The methods of {@link WorkspaceFiles}. */
const FILE_QUERIES = ["stat", "realpath", "readDir", "mkdir", "readFileRange"];

Deno.test("HostWorkspace answers the WorkspaceFiles queries from the host's file system", async () => {
  await using ws = await tempWorkspace();
  const files: WorkspaceFiles = new HostWorkspace(new NodeHost());
  await files.mkdir(`${ws.root}/a/b`);
  await ws.write("a/b/c.txt", "0123456789");
  await Deno.symlink(`${ws.root}/a/b/c.txt`, `${ws.root}/link`);
  const info = await files.stat(`${ws.root}/link`);
  assert.deepEqual(
    info && { isFile: info.isFile, isSymlink: info.isSymlink, size: info.size },
    { isFile: true, isSymlink: true, size: 10 },
  );
  assert.equal(await files.stat(`${ws.root}/missing`), undefined);
  assert.equal(await files.realpath(`${ws.root}/link`), `${ws.root}/a/b/c.txt`);
  assert.deepEqual(
    (await files.readDir(`${ws.root}/a`)).map((entry) => [entry.name, entry.isDirectory]),
    [["b", true]],
  );
  const range = await files.readFileRange(`${ws.root}/a/b/c.txt`, 2, 5);
  assert.equal(new TextDecoder().decode(range), "234");
  assert.equal(new TextDecoder().decode(await files.readFileRange(`${ws.root}/link`, 8)), "89");
});

Deno.test("the built-in tools reach the host's files only through the WorkspaceFiles queries", async () => {
  await using ws = await tempWorkspace();
  await ws.write("src/a.txt", "alpha\nbeta\n");
  const used = new Set<string>();
  const real = new HostWorkspace(new NodeHost());
  // Only the five queries exist on this object; anything else a tool reached for is recorded.
  const files = new Proxy(real, {
    get(target, property): unknown {
      used.add(String(property));
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const calls: [Tool, Record<string, unknown>][] = [
    [listDirectoryTool, { path: "src" }],
    [findFilesTool, { pattern: "**/*.txt" }],
    [searchTextTool, { pattern: "beta" }],
    [readFileTool, { path: "src/a.txt" }],
    [writeFileTool, { path: "new/b.txt", content: "new\n" }],
    [editFileTool, { path: "src/a.txt", old_text: "beta", new_text: "gamma" }],
    [runCommandTool, { command: "cat src/a.txt", cwd: "." }],
  ];
  for (const [tool, input] of calls) {
    const result = await tool.execute(input, { ...ws.context(), files });
    assert.equal(result.isError, false, `${tool.name}: ${result.content}`);
  }
  assert.equal(await ws.read("new/b.txt"), "new\n");
  assert.equal(await ws.read("src/a.txt"), "alpha\ngamma\n");
  assert.deepEqual([...used].filter((name) => !FILE_QUERIES.includes(name)), []);
  assert.deepEqual([...used].sort(), [...FILE_QUERIES].sort());
});
