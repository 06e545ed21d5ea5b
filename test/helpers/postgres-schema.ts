/**
 * A Postgres schema of a test file's own, for tests that move the inbox's global state (the
 * overview's marks, retention across sources, a table of 30,000 rows): every test file shares one
 * database and they run at once, so such a file migrates a fresh schema before its tests and drops
 * it after them. Its clients find it first on their search path (a startup option of the
 * connection, not a session SET).
 */
/// <reference types="vite/client" />
import { env } from "cloudflare:workers";
import { afterAll, beforeAll } from "vitest";
import { withClient, type Queryable } from "../../src/store/postgres/client";

/** migrations-postgres, in order, as the test setup applies them to the shared schema. */
const MIGRATIONS = Object.entries(import.meta.glob<string>("../../migrations-postgres/*.sql", { query: "?raw", import: "default", eager: true }))
  .sort(([a], [b]) => (a < b ? -1 : 1))
  .map(([, sql]) => sql);

/**
 * Registers the schema's creation and removal with the file's hooks, and returns a runner whose
 * clients work in it.
 * @example
 * const db = privateSchema("sweep");
 * await db((q) => q.query("SELECT COUNT(*) FROM deliveries"));
 */
export function privateSchema(name: string): <T>(fn: (q: Queryable) => Promise<T>) => Promise<T> {
  const schema = `test_${name}_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
  const url = new URL(env.HYPERDRIVE!.connectionString);
  url.searchParams.set("options", `-c search_path=${schema}`);
  beforeAll(() => withClient(env.HYPERDRIVE!, (q) => q.query(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}; ${MIGRATIONS.join(";\n")}`)));
  afterAll(() => withClient(env.HYPERDRIVE!, (q) => q.query(`DROP SCHEMA ${schema} CASCADE`)));
  return (fn) => withClient({ connectionString: url.toString() } as Hyperdrive, fn);
}
