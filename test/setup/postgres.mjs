/**
 * A real Postgres server for the Postgres suite (`npm run test:postgres`,
 * test/vitest.postgres.config.ts), started in Node by vitest's globalSetup before the Workers pool
 * reads its options: a private server in a temporary folder (src/cli/lib/local-postgres.mjs),
 * migrations-postgres applied, its URL given to the pool as `inject("postgresUrl")`, which binds it
 * as the Worker's Hyperdrive `HYPERDRIVE`. Stopped and deleted at the end of the run.
 *
 * No Postgres, no run: the suite fails with what to install, on CI and off it (it is asked for by
 * name, so skipping would only hide that nothing was tested).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { startLocalPostgres } from "../../src/cli/lib/local-postgres.mjs";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "../../src/cli/lib/postgres-migrations.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

export default async function setup({ provide }) {
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-postgres-"));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  let server;
  try {
    // Not durable: no fsync, the data lives as long as the run.
    server = await startLocalPostgres({ dir, durable: false });
    await applyPostgresMigrations({ databaseUrl: server.url, dir: join(ROOT, POSTGRES_MIGRATIONS_DIR) });
  } catch (error) {
    await server?.stop();
    remove();
    throw error;
  }
  provide("postgresUrl", server.url);
  return async () => {
    await server.stop();
    remove();
  };
}
