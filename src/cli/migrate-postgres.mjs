#!/usr/bin/env node
/**
 * `npm run migrate:postgres`: applies migrations-postgres/*.sql to the database of DATABASE_URL
 * (the origin database, not Hyperdrive), those not yet applied, in order, each in its own
 * transaction (src/cli/lib/postgres-migrations.mjs). Safe to run again: it then applies nothing.
 *
 *   DATABASE_URL='postgres://user:password@host:5432/db?sslmode=require' npm run migrate:postgres
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "./lib/postgres-migrations.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));

const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) {
  console.error(
    "DATABASE_URL is not set: it names the Postgres database to migrate, e.g.\n" +
      "  DATABASE_URL='postgres://user:password@host:5432/database?sslmode=require' npm run migrate:postgres\n" +
      "(`npm run dev:postgres` migrates its own local server without it.)",
  );
  process.exit(2);
}

try {
  const { applied, alreadyApplied } = await applyPostgresMigrations({
    databaseUrl,
    dir: join(ROOT, POSTGRES_MIGRATIONS_DIR),
    log: (line) => console.log(line),
  });
  console.log(`${applied.length} migration(s) applied, ${alreadyApplied.length} already applied before.`);
} catch (error) {
  console.error(`migrate:postgres: ${error instanceof Error ? error.message : error}`);
  process.exit(1);
}
