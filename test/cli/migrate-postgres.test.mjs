// `npm run migrate:postgres` and the function behind it (src/cli/lib/postgres-migrations.mjs), on a
// private Postgres server (src/cli/lib/local-postgres.mjs) with throwaway migrations of its own,
// then the project's migrations-postgres through the command. Skipped without Postgres on the
// machine, except on CI (CI=true), where that fails.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { startLocalPostgres } from "../../src/cli/lib/local-postgres.mjs";
import { skipWithoutPostgres } from "../helpers/postgres-available.mjs";
import { applyPostgresMigrations, migrationFiles } from "../../src/cli/lib/postgres-migrations.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const COMMAND = join(ROOT, "src", "cli", "migrate-postgres.mjs");

const skip = skipWithoutPostgres;

const folders = [];
function temporaryDir(prefix) {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  folders.push(dir);
  return dir;
}

after(() => {
  for (const dir of folders) rmSync(dir, { recursive: true, force: true });
});

/** A folder of migrations: `{ "0001_a.sql": "…" }`. */
function migrations(files) {
  const dir = temporaryDir("webhook-inbox-migrations-");
  for (const [name, sql] of Object.entries(files)) writeFileSync(join(dir, name), sql);
  return dir;
}

let server;
let databases = 0;
/** A fresh empty database on the shared server; its URL. */
async function freshDatabase() {
  const name = `migrate_${++databases}`;
  const admin = new pg.Client({ connectionString: server.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  return server.url.replace(/\/webhook_inbox$/, `/${name}`);
}

/** @param {string} url @param {string} text @param {unknown[]} [values] */
async function query(url, text, values) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text, values)).rows;
  } finally {
    await client.end();
  }
}

describe("migrationFiles", () => {
  it("lists NNNN_name.sql files in order and nothing else", () => {
    const dir = migrations({ "0002_b.sql": "", "0001_a.sql": "", "README.md": "", "1_short.sql": "", "0003_c.sql.bak": "" });
    assert.deepEqual(migrationFiles(dir), ["0001_a.sql", "0002_b.sql"]);
  });
});

describe("applyPostgresMigrations", { skip }, () => {
  before(async () => {
    server = await startLocalPostgres({ dir: temporaryDir("webhook-inbox-migrate-pg-"), durable: false });
  });
  after(async () => {
    await server?.stop();
  });

  it("applies each file in order, records its name, and applies nothing a second time", async () => {
    const url = await freshDatabase();
    const dir = migrations({
      "0001_table.sql": "CREATE TABLE things (id bigint PRIMARY KEY, body bytea NOT NULL);",
      "0002_function.sql": "CREATE FUNCTION one() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;\nINSERT INTO things VALUES (1, '\\x00ff');",
    });
    assert.deepEqual(await applyPostgresMigrations({ databaseUrl: url, dir }), { applied: ["0001_table.sql", "0002_function.sql"], alreadyApplied: [] });
    assert.deepEqual(await applyPostgresMigrations({ databaseUrl: url, dir }), { applied: [], alreadyApplied: ["0001_table.sql", "0002_function.sql"] });
    assert.deepEqual(await query(url, "SELECT name FROM inbox_migrations ORDER BY name"), [{ name: "0001_table.sql" }, { name: "0002_function.sql" }]);
    assert.deepEqual(await query(url, "SELECT count(*)::int AS things, one() AS one FROM things"), [{ things: 1, one: 1 }]);
  });

  it("rolls a failing file back whole, keeps the ones before it, and names the file and line", async () => {
    const url = await freshDatabase();
    const dir = migrations({
      "0001_good.sql": "CREATE TABLE good (id int);",
      "0002_bad.sql": "CREATE TABLE half (id int);\n\nSELEC 1;",
    });
    await assert.rejects(applyPostgresMigrations({ databaseUrl: url, dir }), /migration 0002_bad\.sql failed.*syntax error.*\(line 3\)/);
    assert.deepEqual(await query(url, "SELECT name FROM inbox_migrations"), [{ name: "0001_good.sql" }]);
    assert.deepEqual(await query(url, "SELECT to_regclass('good') IS NOT NULL AS good, to_regclass('half') IS NOT NULL AS half"), [{ good: true, half: false }]);
  });

  it("applies each file once when several runs start at the same moment on a new database", async () => {
    const url = await freshDatabase();
    const dir = migrations({
      "0001_a.sql": "CREATE TABLE counted (n int); INSERT INTO counted VALUES (1);",
      "0002_b.sql": "INSERT INTO counted VALUES (2);",
    });
    const runs = await Promise.all([1, 2, 3, 4].map(() => applyPostgresMigrations({ databaseUrl: url, dir })));
    assert.equal(runs.flatMap((run) => run.applied).length, 2);
    assert.deepEqual(await query(url, "SELECT n FROM counted ORDER BY n"), [{ n: 1 }, { n: 2 }]);
  });

  it("npm run migrate:postgres applies the project's migrations-postgres, then nothing", async () => {
    const url = await freshDatabase();
    const environment = { ...process.env, DATABASE_URL: url };
    const first = spawnSync(process.execPath, [COMMAND], { env: environment, encoding: "utf8" });
    assert.equal(first.status, 0, first.stderr);
    const files = migrationFiles(join(ROOT, "migrations-postgres"));
    assert.match(first.stdout, new RegExp(`${files.length} migration\\(s\\) applied, 0 already`));
    const second = spawnSync(process.execPath, [COMMAND], { env: environment, encoding: "utf8" });
    assert.equal(second.status, 0, second.stderr);
    assert.match(second.stdout, new RegExp(`0 migration\\(s\\) applied, ${files.length} already`));
  });
});

describe("npm run migrate:postgres without DATABASE_URL", () => {
  it("exits 2 and says what to set", () => {
    const environment = { ...process.env };
    delete environment.DATABASE_URL;
    const result = spawnSync(process.execPath, [COMMAND], { env: environment, encoding: "utf8" });
    assert.equal(result.status, 2);
    assert.match(result.stderr, /DATABASE_URL is not set/);
  });
});
