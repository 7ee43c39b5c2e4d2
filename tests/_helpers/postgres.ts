/**
 * The PostgreSQL server of the tests: `ACP_HARNESS_TEST_POSTGRES` is a URL to a server where
 * the role may CREATE DATABASE (`scripts/postgres_test_server.sh` starts one). Without it, the
 * PostgreSQL tests are skipped with one loud line on a developer machine, and fail in CI
 * (`CI=true`): they never skip there.
 *
 * @module
 */
import postgres from "postgres";
import { missingDependency } from "./missing_dependency.ts";

/** The variable naming the test server. */
export const POSTGRES_URL_VARIABLE = "ACP_HARNESS_TEST_POSTGRES";

const SKIPPED =
  `PostgreSQL tests SKIPPED: set ${POSTGRES_URL_VARIABLE}=postgres://… (scripts/postgres_test_server.sh starts one)`;

/**
 * Whether the tests have a server: its URL, or why they are skipped (announced once, loudly, on
 * stderr). In CI without a server this throws, so the test file fails to load instead of
 * skipping.
 *
 * @returns `{ url }`, or `{ skipped }` with the reason
 */
export function postgresAvailable(): { readonly url: string } | { readonly skipped: string } {
  const url = Deno.env.get(POSTGRES_URL_VARIABLE);
  if (url) return { url };
  missingDependency({
    key: "POSTGRES",
    skipped: SKIPPED,
    inCi: `${POSTGRES_URL_VARIABLE} is not set: in CI the PostgreSQL tests must run, never skip ` +
      "(scripts/postgres_test_server.sh run <command> provides a server)",
  });
  return { skipped: SKIPPED };
}

/**
 * Registers a test that needs PostgreSQL: ignored (after the loud line) when no server is given.
 *
 * @param name The test name
 * @param fn The test, given the server's URL
 */
export function postgresTest(name: string, fn: (url: string) => Promise<void>): void {
  const available = postgresAvailable();
  Deno.test({
    name,
    ignore: "skipped" in available,
    fn: () => fn("url" in available ? available.url : ""),
  });
}

/** A fresh database; disposing it drops it. */
export interface TestDatabase extends AsyncDisposable {
  /** The URL of the fresh database (same server and role). */
  readonly url: string;
  /** Its name. */
  readonly name: string;
}

/**
 * Creates a database with a random name on the test server, dropped (with its connections) on
 * dispose.
 *
 * @param serverUrl The server (default: {@link POSTGRES_URL_VARIABLE})
 * @returns The database
 */
export async function withTestDatabase(serverUrl?: string): Promise<TestDatabase> {
  const base = serverUrl ?? Deno.env.get(POSTGRES_URL_VARIABLE);
  if (!base) throw new Error(`${POSTGRES_URL_VARIABLE} is not set`);
  const name = `acp_test_${crypto.randomUUID().replaceAll("-", "").slice(0, 20)}`;
  const admin = postgres(base, { max: 1, onnotice: () => {}, connect_timeout: 10 });
  try {
    await admin.unsafe(`CREATE DATABASE ${name}`);
  } catch (error) {
    await admin.end({ timeout: 1 });
    throw error;
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    name,
    async [Symbol.asyncDispose](): Promise<void> {
      try {
        await admin.unsafe(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await admin.end({ timeout: 5 });
      }
    },
  };
}
