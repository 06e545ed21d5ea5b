/**
 * Under `npm run test:postgres`, gives each test file that runs on both stores (test/store-suites.ts)
 * a Postgres schema of its own, as `npm test` gives each file a D1 of its own: the tests of one file
 * run in order on its data (counts accumulate, ids repeat across files), while the files run at once
 * on one server. test/store/postgres/* keep the database as they found it (they isolate themselves).
 *
 * The schema is made afresh (dropped first, should a watch-mode rerun find it) and migrated with
 * migrations-postgres, in order; the Worker's `env.HYPERDRIVE` is then a binding whose connection
 * string sets `search_path` to it, so the store, the handlers' effects and test/helpers/store-db.ts
 * all work there. The server and its data go with the run (test/setup/postgres.mjs).
 *
 * And `env.DB` throws: a test that runs on both stores reads and writes through the store and
 * store-db.ts only, so reaching D1 here is a bug in the test (it would check D1, not Postgres).
 */
/// <reference types="vite/client" />
import { env } from "cloudflare:workers";
import { Client } from "pg";
import { expect } from "vitest";

const MIGRATIONS = Object.entries(import.meta.glob<string>("../../migrations-postgres/*.sql", { query: "?raw", import: "default", eager: true }))
  .sort(([a], [b]) => (a < b ? -1 : 1))
  .map(([, text]) => text);

/** This file's path from the project's root, e.g. test/processing/consumer.test.ts. */
const testPath = (expect.getState().testPath ?? "").replace(/^.*?\/test\//, "test/");

if (env.HYPERDRIVE && !testPath.startsWith("test/store/postgres/")) {
  // A name of its own per file (at most 63 characters): the path, with what an identifier cannot hold replaced.
  const schema = `t_${testPath.replace(/^test\//, "").replace(/\.test\.ts$/, "").replace(/[^a-z0-9]+/gi, "_").toLowerCase()}`.slice(0, 63);
  const client = new Client({ connectionString: env.HYPERDRIVE.connectionString });
  client.on("error", () => {});
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}; SET search_path TO ${schema}; ${MIGRATIONS.join(";\n")}`);
  } finally {
    await client.end().catch(() => {});
  }
  const url = new URL(env.HYPERDRIVE.connectionString);
  url.searchParams.set("options", `-c search_path=${schema}`);
  // The store reads only the connection string of its binding (src/store/postgres/client.ts).
  (env as { HYPERDRIVE?: Hyperdrive }).HYPERDRIVE = { connectionString: url.toString() } as Hyperdrive;
  (env as { DB: D1Database }).DB = new Proxy({} as D1Database, {
    get(_target, property) {
      throw new Error(`${testPath} runs on both stores: it reached env.DB.${String(property)} under the Postgres suite (use test/helpers/store-db.ts)`);
    },
  });
}
