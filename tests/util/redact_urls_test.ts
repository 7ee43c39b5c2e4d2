import assert from "node:assert/strict";
import { redactUrls } from "../../src/util/redact_urls.ts";

Deno.test("redactUrls removes the user name and password of a URL", () => {
  assert.equal(
    redactUrls(
      "Request cannot be constructed from a URL that includes credentials: " +
        "http://u:SECRETPASS@127.0.0.1:41234/mcp",
    ),
    "Request cannot be constructed from a URL that includes credentials: " +
      "http://127.0.0.1:41234/mcp",
  );
  assert.equal(redactUrls("https://only-user@example.test/"), "https://example.test/");
  assert.equal(redactUrls("http://u:p@host"), "http://host");
  // The last `@` ends the userinfo, as URL parsing has it.
  assert.equal(redactUrls("http://u:p@ss@host:1/x"), "http://host:1/x");
  assert.equal(redactUrls("postgres://acp:pw@127.0.0.1:5432/db"), "postgres://127.0.0.1:5432/db");
});

Deno.test("redactUrls handles ports, IPv6 hosts and percent-encoding", () => {
  assert.equal(redactUrls("http://u:SECRET@[::1]:8080/mcp"), "http://[::1]:8080/mcp");
  assert.equal(redactUrls("(http://[fe80::1%25eth0]:1/)"), "(http://[fe80::1%25eth0]:1/)");
  assert.equal(redactUrls("http://u%40x:p%3Aw%40@host:65535/"), "http://host:65535/");
  assert.equal(
    redactUrls("http://host/?%74oken=SECRET&a=1"),
    "http://host/?%74oken=[redacted]&a=1",
  );
  assert.equal(redactUrls("http://h/?API%5FKEY=SECRET"), "http://h/?API%5FKEY=[redacted]");
  assert.equal(
    redactUrls("http://h/?x=1&ACCESS_TOKEN=S%20ECRET#f"),
    "http://h/?x=1&ACCESS_TOKEN=[redacted]#f",
  );
});

Deno.test("redactUrls replaces the values of credential-like parameters only", () => {
  const names = [
    "token",
    "key",
    "api_key",
    "apikey",
    "x-api-key",
    "access_token",
    "refresh-token",
    "secret",
    "client_secret",
    "password",
    "passwd",
    "pwd",
    "sig",
    "X-Amz-Signature",
    "code",
    "auth",
    "session_id",
  ];
  for (const name of names) {
    assert.equal(
      redactUrls(`GET http://h:1/p?page=2&${name}=SECRET&sort=asc failed`),
      `GET http://h:1/p?page=2&${name}=[redacted]&sort=asc failed`,
      name,
    );
  }
  // A fragment (OAuth's implicit flow), `;` separators and a value with `;` or `?` in it.
  assert.equal(
    redactUrls("http://h/#access_token=SECRET&x=1"),
    "http://h/#access_token=[redacted]&x=1",
  );
  assert.equal(redactUrls("http://h/?a=1;token=SECRET"), "http://h/?a=1;token=[redacted]");
  assert.equal(redactUrls("http://h/?token=SEC;RET?x&b=2"), "http://h/?token=[redacted]&b=2");
  assert.equal(redactUrls("http://h/?next=/a?token=SECRET"), "http://h/?next=/a?token=[redacted]");
  // Not credentials: kept.
  assert.equal(redactUrls("http://h/?page=2&q=tokens"), "http://h/?page=2&q=tokens");
});

Deno.test("redactUrls redacts every URL of a text and keeps the rest", () => {
  const text =
    "error sending request for url (http://u:SECRETPASS@127.0.0.1:9/mcp?token=SECRETQ): " +
    'client error; retried "https://a:b@x.test/?key=K2" and ws://user:pw@[::1]:80/ws.';
  const redacted = redactUrls(text);
  assert.equal(
    redacted,
    "error sending request for url (http://127.0.0.1:9/mcp?token=[redacted] " +
      'client error; retried "https://x.test/?key=[redacted]" and ws://[::1]:80/ws.',
  );
  for (const secret of ["SECRETPASS", "SECRETQ", "K2", "user:pw", "a:b@"]) {
    assert.ok(!redacted.includes(secret), secret);
  }
});

Deno.test("redactUrls leaves text without URLs alone", () => {
  for (
    const text of [
      "",
      "plain text",
      "mail me at user:pass@example.test",
      "token=abc&key=def",
      "a ratio of 3:4 @ noon",
      "file:/etc/passwd?token=x",
      "http:/one-slash?token=x",
      "see https://example.test/docs for more",
      "http://host:8080/path?page=1#top",
    ]
  ) {
    assert.equal(redactUrls(text), text);
  }
});
