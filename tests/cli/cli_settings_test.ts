import assert from "node:assert/strict";
import { settingsOf } from "../../src/cli/cli_settings.ts";
import { DEFAULT_CONFIG, mergeConfig } from "../../src/config/config.ts";
import { DEFAULT_SERVER_SETTINGS } from "../../src/server/server_settings.ts";

Deno.test("settingsOf() maps the default config to the server's own defaults", () => {
  assert.deepEqual(settingsOf(DEFAULT_CONFIG).server, DEFAULT_SERVER_SETTINGS);
});

Deno.test("settingsOf() converts every time in seconds to ms", () => {
  const settings = settingsOf(mergeConfig({
    permissionTimeout: 2,
    storeCommitTimeout: 3,
    mcpStartTimeout: 4,
    mcpCallTimeout: 5,
    leaseTtl: 6,
    stallTimeout: 7,
    idleTimeout: 8,
    bodyTimeout: 9,
    headerTimeout: 10,
  }));
  assert.equal(settings.server.permissionTimeoutMs, 2000);
  assert.equal(settings.server.storeCommitTimeoutMs, 3000);
  assert.equal(settings.server.mcpStartTimeoutMs, 4000);
  assert.equal(settings.server.mcpCallTimeoutMs, 5000);
  assert.deepEqual(settings.store, { leaseTtlMs: 6000, commitTimeoutMs: 3000 });
  assert.equal(settings.httpLimits.stallTimeoutMs, 7000);
  assert.equal(settings.httpLimits.idleTimeoutMs, 8000);
  assert.equal(settings.httpLimits.bodyTimeoutMs, 9000);
  assert.equal(settings.httpListen.headerTimeoutMs, 10_000);
});

Deno.test("settingsOf() carries the other settings as they are", () => {
  const config = mergeConfig({
    model: "scripted",
    mode: "auto",
    stream: true,
    maxSteps: 7,
    compactThreshold: 0.5,
    mcpStrict: true,
    sessionListPageSize: 3,
    maxRequestsInFlight: 9,
    port: 4000,
    host: "::1",
  });
  const { server, httpListen, httpLimits } = settingsOf(config);
  assert.deepEqual(
    [server.model, server.mode, server.stream, server.maxSteps, server.compactThreshold],
    ["scripted", "auto", true, 7, 0.5],
  );
  assert.deepEqual([server.mcpStrict, server.sessionListPageSize, server.maxRequestsInFlight], [
    true,
    3,
    9,
  ]);
  assert.deepEqual([httpListen.hostname, httpListen.port], ["::1", 4000]);
  assert.equal(httpLimits.maxBodyBytes, config.maxMessageBytes);
});

Deno.test("settingsOf() checks config mcpServers with session/new's validator, naming the entry", () => {
  const settings = settingsOf(mergeConfig({
    mcpServers: [{ name: "ops", command: "/bin/true", args: ["x"], env: [] }],
  }));
  assert.deepEqual(settings.server.mcpServers?.map((server) => server.name), ["ops"]);
  assert.equal(settingsOf(DEFAULT_CONFIG).server.mcpServers, undefined);
  assert.throws(
    () => settingsOf(mergeConfig({ mcpServers: [{ name: "ops", command: "relative" }] })),
    (error: Error) =>
      error.name === "ConfigError" && /^Invalid "mcpServers".*mcpServers\[0\]/.test(error.message),
  );
});
