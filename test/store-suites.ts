/**
 * The test folders that run on both stores: under `npm test` on D1 (with every other file), and under
 * `npm run test:postgres` on Postgres (test/vitest.postgres.config.ts, beside test/store/postgres/).
 * Each names the test files directly in it (`<folder>/*.test.ts`), not its subfolders.
 *
 * test/ mirrors src/. A folder listed here holds only tests of the store's behaviour (through
 * `openStore(env)`, the Worker's routes, the consumer or the sweeper) that read and write the
 * database only through test/helpers/store-db.ts. The tests of the same part of src/ that touch no
 * store (a parser, a signer, a Durable Object of its own) sit in its `store-free/` subfolder, or in
 * the folder that mirrors their own part of src/ (test/processing/lease/). Tests of D1's own workings
 * (query plans, rows-written meters, D1 migrations, body chunks, the D1 batcher and group commit, D1
 * fault wrappers) are in test/store/d1/, Postgres's in test/store/postgres/. A file never skips a
 * test by store: a new file that tests the store goes in a folder listed here.
 */
export const BOTH_STORES: readonly string[] = [
  "test/alerts",
  "test/forwarding",
  "test/handlers",
  "test/http",
  "test/http/admin",
  "test/http/ui",
  "test/processing",
  "test/providers",
  "test/providers/catalogue",
  "test/store",
];

/** The files of BOTH_STORES, as globs for vitest's `include`. */
export const BOTH_STORES_FILES: readonly string[] = BOTH_STORES.map((folder) => `${folder}/*.test.ts`);
