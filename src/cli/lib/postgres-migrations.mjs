/**
 * The Postgres store's migrations: `migrations-postgres/NNNN_<name>.sql`, applied in order, each
 * in its own transaction, and recorded by name in `inbox_migrations`, so that a second run applies
 * only what is new. Used by `npm run migrate:postgres`, `npm run dev:postgres` and the Postgres
 * tests' setup.
 *
 * A file runs as one simple-protocol query (several statements, PL/pgSQL bodies, no parameters)
 * inside the transaction this module opens: it must not hold BEGIN/COMMIT of its own, nor a
 * statement Postgres refuses in a transaction (CREATE INDEX CONCURRENTLY, VACUUM).
 *
 * Run against the database directly (DATABASE_URL), never through Hyperdrive: DDL has no business
 * in a pooled, cached connection, and the table lock below is held across statements.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";

/** The folder of the Postgres migrations, relative to the project root. */
export const POSTGRES_MIGRATIONS_DIR = "migrations-postgres";
/** SQLSTATEs of a CREATE TABLE IF NOT EXISTS that raced another: 23505, 42710, 42P07. */
const CREATED_MEANWHILE = new Set(["23505", "42710", "42P07"]);
/** `0001_inbox.sql`: four digits, an underscore, a name. */
const MIGRATION_FILE = /^\d{4}_[\w-]+\.sql$/;

/**
 * The migration files of `dir`, in the order they apply.
 * @param {string} dir
 * @returns {string[]} file names
 * @example
 * migrationFiles("migrations-postgres"); // ["0001_inbox.sql", "0002_forwarding.sql"]
 */
export function migrationFiles(dir) {
  if (!existsSync(dir)) throw new Error(`no migrations folder at ${dir}`);
  return readdirSync(dir).filter((name) => MIGRATION_FILE.test(name)).sort();
}

/**
 * Applies every migration of `dir` that `inbox_migrations` does not list, in order, each in its
 * own transaction. Concurrent runs wait for each other (a lock on `inbox_migrations` held by each
 * file's transaction), so each file is applied once. A failing file is rolled back, the ones
 * before it stay applied, and the error names the file and the line.
 * @param {object} options
 * @param {string} options.databaseUrl a `postgres://` URL (sslmode etc. as `pg` reads them)
 * @param {string} options.dir the migrations folder
 * @param {(line: string) => void} [options.log] told each file applied
 * @returns {Promise<{ applied: string[], alreadyApplied: string[] }>}
 * @example
 * await applyPostgresMigrations({ databaseUrl: process.env.DATABASE_URL, dir: "migrations-postgres" });
 * // { applied: ["0002_forwarding.sql"], alreadyApplied: ["0001_inbox.sql"] }
 */
export async function applyPostgresMigrations({ databaseUrl, dir, log = () => {} }) {
  const files = migrationFiles(dir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const applied = [];
  const alreadyApplied = [];
  try {
    await client
      .query("CREATE TABLE IF NOT EXISTS inbox_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
      // Two first runs at once: IF NOT EXISTS does not stop the second from meeting the first's
      // half-made table (unique_violation, duplicate_object or duplicate_table). It is there either way.
      .catch((error) => {
        if (!CREATED_MEANWHILE.has(error?.code)) throw error;
      });
    for (const name of files) {
      const sql = readFileSync(join(dir, name), "utf8");
      await client.query("BEGIN");
      try {
        // Another run applying the same file waits here, then finds it recorded.
        await client.query("LOCK TABLE inbox_migrations IN SHARE ROW EXCLUSIVE MODE");
        const { rowCount } = await client.query("SELECT 1 FROM inbox_migrations WHERE name = $1", [name]);
        if (rowCount) {
          await client.query("COMMIT");
          alreadyApplied.push(name);
          continue;
        }
        await client.query(sql);
        await client.query("INSERT INTO inbox_migrations (name) VALUES ($1)", [name]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        throw new Error(`migration ${name} failed, nothing of it was applied: ${describe(error, sql)}`, { cause: error });
      }
      applied.push(name);
      log(`applied ${name}`);
    }
  } finally {
    await client.end();
  }
  return { applied, alreadyApplied };
}

/**
 * A database error with the line of the file it points at.
 * @param {unknown} error @param {string} sql
 */
function describe(error, sql) {
  const { message, position } = /** @type {{ message?: string, position?: string }} */ (error);
  if (!position) return String(message ?? error);
  const line = sql.slice(0, Number(position) - 1).split("\n").length;
  return `${message} (line ${line})`;
}
