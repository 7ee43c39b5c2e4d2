/**
 * The parts of `NodeHost` together: the plain files have the durable files let go of a path
 * before they replace or remove it.
 *
 * @module
 */
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";
import { tempDir } from "../_helpers/temp_dir.ts";
import { NodeDurableFiles } from "../../src/host/node_durable_files.ts";
import { NodeFiles, type OpenFiles } from "../../src/host/node_files.ts";

/** An {@link OpenFiles} that records what it is asked to let go of. */
function recordingOpenFiles(calls: string[]): OpenFiles {
  return {
    forgetFile: (path) => calls.push(`file ${path}`),
    forgetTree: (path) => calls.push(`tree ${path}`),
  };
}

Deno.test("NodeFiles has what keeps files open let go of a path before it replaces or removes it", async () => {
  await using dir = await tempDir("acp-harness-files-");
  const calls: string[] = [];
  const files = new NodeFiles(recordingOpenFiles(calls));
  const a = `${dir.path}/a`;
  const b = `${dir.path}/b`;
  await files.writeFileAtomic(a, "one");
  assert.deepEqual(calls.splice(0), [`file ${a}`]);
  await files.rename(a, b);
  assert.deepEqual(calls.splice(0), [`file ${a}`, `file ${b}`]);
  await files.mkdir(`${dir.path}/sub`);
  await files.readTextFile(b);
  await files.stat(b);
  assert.deepEqual(calls.splice(0), []);
  await files.remove(`${dir.path}/sub`);
  assert.deepEqual(calls, [`tree ${dir.path}/sub`]);
});

Deno.test("NodeDurableFiles.appendFileSync() after its file was replaced or its directory removed appends to the file now there", async () => {
  await using dir = await tempDir("acp-harness-durable-");
  const durable = new NodeDurableFiles();
  const files = new NodeFiles(durable);
  const log = `${dir.path}/log`;
  durable.appendFileSync(log, "a\n");
  await files.writeFileAtomic(log, "new\n");
  durable.appendFileSync(log, "b\n");
  assert.equal(await readFile(log, "utf8"), "new\nb\n");
  const nested = `${dir.path}/sub/log`;
  await files.mkdir(`${dir.path}/sub`);
  durable.appendFileSync(nested, "1\n");
  await files.remove(`${dir.path}/sub`);
  await files.mkdir(`${dir.path}/sub`);
  durable.appendFileSync(nested, "2\n");
  assert.equal(await readFile(nested, "utf8"), "2\n");
  durable.forgetFile(log);
  durable.forgetFile(nested);
});
