#!/usr/bin/env node
// `npm run dev:postgres`: the local inbox on the Postgres store, in one command.
// 1. the database: DATABASE_URL when set; else a private local Postgres server (Debian's
//    `postgresql` binaries) keeping its data in .wrangler/state/postgres, or in <dir>/postgres
//    with `--persist-to <dir>`, started now and stopped with this command;
// 2. applies migrations-postgres to it (npm run migrate:postgres's function);
// 3. runs `npm run dev` (src/cli/dev.mjs: .dev.vars, the D1 migrations, `wrangler dev` on 8787 or
//    `--port`) for wrangler.toml's `postgres` environment, whose Hyperdrive binding HYPERDRIVE
//    connects to that database (CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE). Other
//    arguments are passed through, as to `npm run dev` (`npm run dev:postgres -- --port 8788`).
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { option } from "./lib/args.mjs";
import { DEFAULT_STATE_DIR, PostgresNotInstalledError, startLocalPostgres } from "./lib/local-postgres.mjs";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "./lib/postgres-migrations.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
process.chdir(root);
const ENVIRONMENT = "postgres";

const extra = process.argv.slice(2);
const persistTo = option(extra, "--persist-to");

/** @type {Awaited<ReturnType<typeof startLocalPostgres>> | undefined} */
let server;
let databaseUrl = process.env.DATABASE_URL;
try {
  if (databaseUrl) {
    console.log(`Postgres: DATABASE_URL (${withoutPassword(databaseUrl)})`);
  } else {
    const dir = persistTo === undefined ? DEFAULT_STATE_DIR : join(persistTo, "postgres");
    server = await startLocalPostgres({ dir });
    databaseUrl = server.url;
    console.log(`Postgres: local server ${server.major} in ${dir}, at ${withoutPassword(databaseUrl)} (password in ${join(dir, "password")}); stopped with this command`);
  }
  const { applied } = await applyPostgresMigrations({ databaseUrl, dir: join(root, POSTGRES_MIGRATIONS_DIR) });
  console.log(`Postgres: ${applied.length ? `applied ${applied.join(", ")}` : "migrations up to date"}`);
} catch (error) {
  await server?.stop();
  console.error(
    error instanceof PostgresNotInstalledError
      ? `${error.message}\nOr set DATABASE_URL to a Postgres database of yours: npm run dev:postgres then uses it instead.`
      : `dev:postgres: ${error instanceof Error ? error.message : error}`,
  );
  process.exit(1);
}

const environment = (option(extra, "--env") ?? option(extra, "-e")) === undefined ? ["--env", ENVIRONMENT] : [];
const dev = spawn(process.execPath, [join(root, "src", "cli", "dev.mjs"), ...environment, ...extra], {
  stdio: "inherit",
  env: { ...process.env, CLOUDFLARE_HYPERDRIVE_LOCAL_CONNECTION_STRING_HYPERDRIVE: databaseUrl },
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", async (code, signal) => {
  await server?.stop();
  process.exit(code ?? (signal ? 1 : 0));
});

/** @param {string} url */
function withoutPassword(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString();
  } catch {
    return "(not a URL)";
  }
}
