/**
 * `checkRequest()`: the host an absolute-form request line names is checked as `Host` is.
 *
 * @module
 */
import assert from "node:assert/strict";
import { checkRequest, loopbackHosts } from "../../../src/transport/http/http_security.ts";

const policy = { token: undefined, allowedOrigins: [], allowedHosts: loopbackHosts("127.0.0.1") };
const headers = new Headers({ host: "127.0.0.1:7337" });

Deno.test("checkRequest() refuses a URL naming another host than the loopback Host", async () => {
  assert.equal(await checkRequest(headers, policy, "http://127.0.0.1:7337/acp"), undefined);
  assert.equal(await checkRequest(headers, policy, "http://localhost/acp"), undefined);
  assert.equal(await checkRequest(headers, policy, "http://[::1]:7337/acp"), undefined);
  for (const url of ["http://evil.example/acp", "http://evil.example:7337/acp", "not a url"]) {
    const refusal = await checkRequest(headers, policy, url);
    assert.equal(refusal?.status, 403, url);
    assert.equal(refusal?.title, "Host not allowed");
  }
});

Deno.test("checkRequest() leaves hosts alone beyond loopback", async () => {
  const open = { ...policy, allowedHosts: undefined };
  assert.equal(await checkRequest(headers, open, "http://evil.example/acp"), undefined);
});
