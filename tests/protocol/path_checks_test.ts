import assert from "node:assert/strict";
import { NodeHost } from "../../src/host/node_host.ts";
import { blockingPathChecks } from "../../src/protocol/path_checks.ts";

/** A host whose synchronous calls throw `thrown`, counting the asynchronous calls made. */
class SyncFailingHost extends NodeHost {
  asyncCalls = 0;
  readonly #thrown: unknown;
  constructor(thrown: unknown) {
    super();
    this.#thrown = thrown;
  }
  override statSync(): never {
    throw this.#thrown;
  }
  override realpathSync(): never {
    throw this.#thrown;
  }
  override stat(file: string): ReturnType<NodeHost["stat"]> {
    this.asyncCalls++;
    return super.stat(file);
  }
  override realpath(file: string): Promise<string> {
    this.asyncCalls++;
    return super.realpath(file);
  }
}

Deno.test("blockingPathChecks answers as the asynchronous calls do", async () => {
  const host = new NodeHost();
  const checks = blockingPathChecks(host);
  assert.deepEqual(await checks.stat("/"), await host.stat("/"));
  assert.equal(await checks.stat("/no/such/path"), undefined);
  assert.equal(await checks.realpath("/"), await host.realpath("/"));
  await assert.rejects(checks.realpath("/no/such/path"), { code: "ENOENT" });
});

Deno.test("blockingPathChecks reports a file-system error without retrying it", async () => {
  const error = Object.assign(new Error("denied"), { code: "EACCES" });
  const host = new SyncFailingHost(error);
  const checks = blockingPathChecks(host);
  await assert.rejects(checks.stat("/"), error);
  await assert.rejects(checks.realpath("/"), error);
  assert.equal(host.asyncCalls, 0);
});

Deno.test("blockingPathChecks falls back to the asynchronous call when the synchronous one cannot be made", async () => {
  // As `node:fs` not loaded yet: an error with no `code`.
  const host = new SyncFailingHost(new TypeError("fs is undefined"));
  const checks = blockingPathChecks(host);
  assert.equal((await checks.stat("/"))?.isDirectory, true);
  assert.equal(await checks.realpath("/"), "/");
  assert.equal(host.asyncCalls, 2);
});
