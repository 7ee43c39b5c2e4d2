/**
 * The tenants file's parsing (strict, naming the field), token hashes, the directory that
 * resolves tokens, each tenant's request bucket, and the budgets and roots a tenant gets.
 *
 * @module
 */
import assert from "node:assert/strict";
import {
  commonRoots,
  hashToken,
  lowerBudgets,
  parseTenants,
  TenantDirectory,
  TenantsFileError,
  TenantUsage,
} from "../../src/server/tenants.ts";
import { parseArgs } from "../../src/config/args.ts";
import { hashTokenCommand } from "../../src/cli/hash_token_command.ts";

const HASH = `sha256:${"ab".repeat(32)}`;
const OTHER = `sha256:${"cd".repeat(32)}`;

function refused(value: unknown, pattern: RegExp): void {
  assert.throws(() => parseTenants(value), (error: unknown) => {
    assert.ok(error instanceof TenantsFileError, String(error));
    assert.match(error.message, pattern);
    return true;
  });
}

Deno.test("parseTenants() reads names, token hashes, roots and limits (turnTimeout in s)", () => {
  assert.deepEqual(
    parseTenants({
      tenants: [
        {
          name: "ci",
          tokens: [HASH, OTHER],
          allowedRoots: ["/srv/ci"],
          limits: {
            sessions: 20,
            prompts: 4,
            requestsPerMinute: 600,
            maxSteps: 10,
            maxToolCalls: 5,
            turnTimeout: 30,
            maxSessionTokens: 100_000,
            maxSessionCost: 1.5,
          },
        },
        { name: "web-2_b", tokens: [`sha256:${"01".repeat(32)}`] },
      ],
    }),
    [
      {
        name: "ci",
        tokens: ["ab".repeat(32), "cd".repeat(32)],
        allowedRoots: ["/srv/ci"],
        limits: {
          sessions: 20,
          prompts: 4,
          requestsPerMinute: 600,
          maxSteps: 10,
          maxToolCalls: 5,
          turnTimeoutMs: 30_000,
          maxSessionTokens: 100_000,
          maxSessionCostUsd: 1.5,
        },
      },
      { name: "web-2_b", tokens: ["01".repeat(32)], limits: {} },
    ],
  );
  assert.deepEqual(parseTenants({ tenants: [] }), []);
});

Deno.test("parseTenants() refuses what is not a tenant, naming the field", () => {
  refused([], /the file must hold a JSON object/);
  refused({ tenant: [] }, /^tenant: unknown key/);
  refused({ tenants: {} }, /^tenants: must be an array/);
  refused({ tenants: [1] }, /^tenants\[0\]: must be an object/);
  refused(
    { tenants: [{ name: "ci", tokens: [HASH], owner: "x" }] },
    /^tenants\[0\]\.owner: unknown key/,
  );
  for (const name of ["", "CI", "-ci", "c i", "ci/x", "a".repeat(65), 7]) {
    refused({ tenants: [{ name, tokens: [HASH] }] }, /^tenants\[0\]\.name: must be 1 to 64/);
  }
  refused({ tenants: [{ name: "ci" }] }, /^tenants\[0\]\.tokens: must be a non-empty array/);
  refused({ tenants: [{ name: "ci", tokens: [] }] }, /^tenants\[0\]\.tokens: must be a non-empty/);
  for (const token of ["plain-token", `sha256:${"AB".repeat(32)}`, `sha1:${"ab".repeat(20)}`]) {
    refused(
      { tenants: [{ name: "ci", tokens: [HASH, token] }] },
      /^tenants\[0\]\.tokens\[1\]: must be "sha256:" and 64 lowercase hex digits \(print one with "acp-harness hash-token"\)$/,
    );
  }
  refused(
    { tenants: [{ name: "ci", tokens: [HASH], allowedRoots: ["relative"] }] },
    /^tenants\[0\]\.allowedRoots: must be an array of absolute paths/,
  );
  refused(
    { tenants: [{ name: "ci", tokens: [HASH], limits: { sessions: 0 } }] },
    /^tenants\[0\]\.limits\.sessions: must be a positive integer$/,
  );
  refused(
    { tenants: [{ name: "ci", tokens: [HASH], limits: { prompts: 1.5 } }] },
    /^tenants\[0\]\.limits\.prompts: must be a positive integer$/,
  );
  refused(
    { tenants: [{ name: "ci", tokens: [HASH], limits: { maxSessionCost: "1" } }] },
    /^tenants\[0\]\.limits\.maxSessionCost: must be a positive number$/,
  );
  refused(
    { tenants: [{ name: "ci", tokens: [HASH], limits: { rpm: 5 } }] },
    /^tenants\[0\]\.limits\.rpm: unknown limit \(expected sessions, prompts, requestsPerMinute/,
  );
  refused(
    { tenants: [{ name: "ci", tokens: [HASH] }, { name: "ci", tokens: [OTHER] }] },
    /^tenants\[1\]\.name: "ci" is given twice$/,
  );
  refused(
    { tenants: [{ name: "ci", tokens: [HASH] }, { name: "web", tokens: [OTHER, HASH] }] },
    /^tenants\[1\]\.tokens\[1\]: the same token hash is given twice$/,
  );
});

Deno.test("hashToken() is sha256: and the hex SHA-256 of the token's UTF-8", async () => {
  assert.equal(
    await hashToken(""),
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
  );
  assert.match(await hashToken("ünïcode"), /^sha256:[0-9a-f]{64}$/);
});

Deno.test("TenantDirectory resolves each token to its tenant, and keeps use across reloads", async () => {
  const tenants = new TenantDirectory();
  const hex = async (token: string) => (await hashToken(token)).slice(7);
  tenants.replace([
    { name: "ci", tokens: [await hex("a"), await hex("b")], limits: { sessions: 1 } },
    { name: "web", tokens: [await hex("c")], allowedRoots: ["/srv/web"], limits: {} },
  ]);
  assert.equal(tenants.size, 2);
  assert.equal(tenants.allHaveRoots, false);
  const a = await tenants.resolve("a");
  assert.equal(a?.scope.name, "ci");
  assert.equal((await tenants.resolve("b"))?.scope.name, "ci");
  assert.equal((await tenants.resolve("c"))?.scope.allowedRoots?.[0], "/srv/web");
  assert.equal(await tenants.resolve("d"), undefined);
  assert.equal(await tenants.resolve(""), undefined);
  const usage = a?.scope.usage;
  const change = tenants.replace([
    { name: "ci", tokens: [await hex("b")], limits: { sessions: 3 } },
    { name: "ops", tokens: [await hex("e")], limits: {} },
  ]);
  assert.deepEqual(change, { added: ["ops"], removed: ["web"] });
  assert.equal(await tenants.resolve("a"), undefined);
  assert.equal(tenants.holds(a!), false);
  const b = await tenants.resolve("b");
  assert.ok(b && tenants.holds(b));
  // The same tenant keeps its use, with the new limits at once.
  assert.equal(b.scope.usage, usage);
  assert.equal(usage?.limits.sessions, 3);
});

Deno.test("TenantUsage: requests a minute are a bucket holding a minute's worth", () => {
  const usage = new TenantUsage("ci", { requestsPerMinute: 2 });
  assert.equal(usage.takeRequest(0), undefined);
  assert.equal(usage.takeRequest(0), undefined);
  assert.equal(usage.takeRequest(0), 30);
  assert.equal(usage.takeRequest(29_000), 1);
  assert.equal(usage.takeRequest(30_000), undefined);
  assert.equal(usage.takeRequest(30_000), 30);
  // No limit, no counting.
  assert.equal(new TenantUsage("web", {}).takeRequest(0), undefined);
});

Deno.test("lowerBudgets() and commonRoots(): the lower of each limit, the roots both allow", () => {
  assert.deepEqual(
    lowerBudgets({ maxSteps: 50, maxSessionTokens: 1000 }, { maxSteps: 5, turnTimeoutMs: 9 }),
    { maxSteps: 5, turnTimeoutMs: 9, maxSessionTokens: 1000 },
  );
  assert.equal(commonRoots(undefined, undefined), undefined);
  assert.deepEqual(commonRoots(["/srv"], undefined), ["/srv"]);
  assert.deepEqual(commonRoots(undefined, ["/srv/ci"]), ["/srv/ci"]);
  assert.deepEqual(commonRoots(["/srv"], ["/srv/ci", "/home/x"]), ["/srv/ci"]);
  assert.deepEqual(commonRoots(["/srv/ci/a", "/opt"], ["/srv/ci"]), ["/srv/ci/a"]);
  assert.deepEqual(commonRoots(["/opt"], ["/srv"]), []);
});

Deno.test("hash-token: its own command, no arguments (the token comes on stdin)", async () => {
  assert.deepEqual(parseArgs(["hash-token"]), { kind: "hash-token", help: false });
  assert.deepEqual(parseArgs(["hash-token", "--help"]), { kind: "hash-token", help: true });
  assert.throws(
    () => parseArgs(["hash-token", "s3cret"]),
    /takes no arguments: it reads the token/,
  );
  const run = async (input: string) => {
    let out = "";
    let err = "";
    const code = await hashTokenCommand({
      stdin: ReadableStream.from([new TextEncoder().encode(input)]),
      stdout: new WritableStream({
        write: (bytes) => void (out += new TextDecoder().decode(bytes)),
      }),
      writeStderr: (text) => void (err += text),
    }, false);
    return { code, out, err };
  };
  assert.deepEqual(await run("  abc  \nsecond line\n"), {
    code: 0,
    out: "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\n",
    err: "",
  });
  const empty = await run("\n");
  assert.equal(empty.code, 2);
  assert.match(empty.err, /no token on stdin/);
});
