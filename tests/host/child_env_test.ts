import assert from "node:assert/strict";
import {
  CHILD_INHERITED_ENV,
  childEnv,
  envNameMatcher,
  SERVER_SECRET_ENV,
} from "../../src/host/child_env.ts";

/** A server's environment: what programs need, and its secrets. */
const HOST: Readonly<Record<string, string | undefined>> = {
  HOME: "/home/me",
  USER: "me",
  LOGNAME: "me",
  PATH: "/usr/bin:/bin",
  SHELL: "/bin/bash",
  TERM: "xterm",
  LANG: "en_US.UTF-8",
  LC_ALL: "C.UTF-8",
  LC_MESSAGES: "C",
  XDG_CONFIG_HOME: "/home/me/.config",
  XDG_RUNTIME_DIR: "/run/user/1000",
  TMPDIR: "/tmp",
  TZ: "UTC",
  DENO_DIR: "/cache/deno",
  NODE_EXTRA_CA_CERTS: "/etc/ca.pem",
  UNSET: undefined,
  OPENAI_API_KEY: "sk-openai",
  ANTHROPIC_API_KEY: "sk-ant",
  DEEPSEEK_API_KEY: "sk-deep",
  ACP_HARNESS_TOKEN: "token",
  ACP_HARNESS_TOKEN_FILE: "/secret/token",
  ACP_HARNESS_HTTP: "true",
  ACP_HARNESS_MODEL: "openai/gpt-5.2",
  AWS_SECRET_ACCESS_KEY: "aws",
  GITHUB_TOKEN: "ghp",
  DENO_AUTH_TOKENS: "a@deno.land",
  NPM_CONFIG__AUTH: "npm",
  NODE_OPTIONS: "--inspect",
  HTTPS_PROXY: "http://user:pw@proxy:8080",
  CI_SOME_VAR: "ci",
};

Deno.test("envNameMatcher() matches exact names and prefix patterns only", () => {
  const matches = envNameMatcher(["HOME", "LC_*", "XDG_*"]);
  for (const name of ["HOME", "LC_ALL", "LC_", "XDG_DATA_HOME"]) assert.ok(matches(name), name);
  for (const name of ["HOMEX", "home", "XLC_ALL", "LC", "PATH"]) assert.ok(!matches(name), name);
  assert.ok(envNameMatcher(["*"])("ANYTHING"));
  assert.ok(!envNameMatcher([])("HOME"));
});

Deno.test("childEnv() with the allow-list keeps what programs need and none of the secrets", () => {
  const env = childEnv(HOST, { inherit: CHILD_INHERITED_ENV });
  assert.deepEqual(Object.keys(env).sort(), [
    "DENO_DIR",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_MESSAGES",
    "LOGNAME",
    "NODE_EXTRA_CA_CERTS",
    "PATH",
    "SHELL",
    "TERM",
    "TMPDIR",
    "TZ",
    "USER",
    "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR",
  ]);
  for (const name of Object.keys(env)) {
    assert.ok(!/KEY|TOKEN|SECRET|AUTH|ACP_HARNESS|PROXY|OPTIONS/.test(name), name);
  }
});

Deno.test("childEnv() puts the declared env on top: it wins and may name a secret", () => {
  const declared: Record<string, string> = JSON.parse(
    '{"TZ":"Europe/Paris","OPENAI_API_KEY":"declared","__proto__":"ordinary"}',
  );
  const env = childEnv(HOST, { inherit: CHILD_INHERITED_ENV, env: declared });
  assert.equal(env.TZ, "Europe/Paris");
  assert.equal(env.OPENAI_API_KEY, "declared");
  assert.equal(Object.getPrototypeOf(env), null);
  assert.equal(Object.getOwnPropertyDescriptor(env, "__proto__")?.value, "ordinary");
  assert.equal(env.ANTHROPIC_API_KEY, undefined);
});

Deno.test("childEnv() without an allow-list keeps the user's environment but the excluded secrets", () => {
  const exclude = [...SERVER_SECRET_ENV, "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY"];
  const env = childEnv(HOST, { exclude, env: { PAGER: "cat" } });
  for (const name of exclude) assert.equal(env[name], undefined, name);
  assert.equal(env.CI_SOME_VAR, "ci");
  assert.equal(env.GITHUB_TOKEN, "ghp", "the user's own variables stay");
  assert.equal(env.PAGER, "cat");
  assert.ok(!("UNSET" in env));
});
