/**
 * The Postgres side of `npm run bench`: a private Postgres server for the end-to-end row on the
 * Postgres store (wrangler.toml's `postgres` environment), and what the database did for it.
 *
 * The server is src/cli/lib/local-postgres.mjs's, as `npm run dev:postgres` starts it (durable:
 * fsync on), its folder in the configuration's state folder (on disk, or /dev/shm when tuned), and
 * migrations-postgres applied. Its counters are read before and after the load, each reading one
 * statement on a connection of its own:
 * - rows written: n_tup_ins, n_tup_upd and n_tup_del of pg_stat_user_tables, by table (the
 *   handler's own `payments` apart);
 * - WAL bytes: pg_current_wal_lsn() moved (the whole server, which holds nothing else);
 * - transactions and connections: xact_commit, xact_rollback and sessions of pg_stat_database.
 *   Each inbox operation opens a client of its own: locally each is a new Postgres backend (a
 *   fork, scram-sha-256 authentication, cold catalog caches), where Hyperdrive would pool them,
 *   so connections per delivery is what a pool saves, not what production pays. A new session
 *   also commits one transaction of its own (its start-up reads the catalog): those are not
 *   counted as the inbox's transactions;
 * - CPU: the server's processes (the postmaster, its live children, and the exited ones it
 *   reaped: short-lived backends), from /proc; and, measured once on the idle server before the
 *   load, what one connection (`SELECT 1`) costs it, so that the CPU can also be shown without
 *   the connections a pool would save (an estimate: connections × that cost, taken out).
 * The bench's own readings and polls are taken out of the transaction and connection counts
 * (`postgresCostPerDelivery`).
 *
 * On by default when Postgres is installed; `BENCH_POSTGRES=0` leaves it out, `BENCH_POSTGRES=1`
 * fails without Postgres instead of leaving it out.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { findPostgresBinaries, PostgresNotInstalledError, startLocalPostgres } from "../src/cli/lib/local-postgres.mjs";
import { applyPostgresMigrations, POSTGRES_MIGRATIONS_DIR } from "../src/cli/lib/postgres-migrations.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
/** The handler's own table (src/handlers/payments.ts): its rows are the user's cost, not the inbox's. */
const EFFECT_TABLE = "payments";
/** Connections opened to measure what one costs the server. */
const CALIBRATION_CONNECTIONS = 40;
/** pg_stat counters reach the shared statistics when a backend ends or within a second of a commit (PGSTAT_MIN_INTERVAL). */
const STATS_SETTLE_MS = 1_500;

/**
 * Whether the bench measures the Postgres row: `{ enabled: true }`, or why not.
 * @throws {PostgresNotInstalledError} with BENCH_POSTGRES=1 and no Postgres
 */
export function postgresBench() {
  if (process.env.BENCH_POSTGRES === "0") return { enabled: false, reason: "BENCH_POSTGRES=0" };
  try {
    findPostgresBinaries();
    return { enabled: true };
  } catch (error) {
    if (error instanceof PostgresNotInstalledError && process.env.BENCH_POSTGRES !== "1") {
      return { enabled: false, reason: `no Postgres here (apt-get install postgresql adds the row; BENCH_POSTGRES=0 hides this note)` };
    }
    throw error;
  }
}

/**
 * Starts a private, migrated Postgres server in a new folder under the current TMPDIR, and
 * measures what one connection costs its CPU.
 * @returns {Promise<{ url: string, dir: string, connectionCpuMs: number | null, counters: () => Promise<Counters>, stop: () => Promise<void> }>}
 */
export async function benchPostgres() {
  const dir = mkdtempSync(join(tmpdir(), "webhook-inbox-bench-postgres-"));
  let server;
  try {
    server = await startLocalPostgres({ dir, durable: true });
    await applyPostgresMigrations({ databaseUrl: server.url, dir: join(ROOT, POSTGRES_MIGRATIONS_DIR) });
  } catch (error) {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const postmasterPidFile = join(dir, "data", "postmaster.pid");
  return {
    url: server.url,
    dir,
    connectionCpuMs: await connectionCpuMs(server.url, postmasterPidFile),
    counters: () => counters(server.url, postmasterPidFile),
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * @typedef {{ tables: Record<string, { inserted: number, updated: number, deleted: number }>, walBytes: bigint,
 *   commits: number, rollbacks: number, sessions: number, cpuMs: number | null }} Counters
 */

/**
 * The server's counters now, after letting the statistics of the work just ended settle. One
 * statement on one connection: the reading itself adds one transaction and one session, which
 * reach the counters after it (`delta` takes them out).
 * @returns {Promise<Counters>}
 */
async function counters(url, postmasterPidFile) {
  await new Promise((resolve) => setTimeout(resolve, STATS_SETTLE_MS));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(`
      SELECT pg_current_wal_lsn()::text AS lsn,
             (SELECT json_object_agg(relname, json_build_array(n_tup_ins, n_tup_upd, n_tup_del)) FROM pg_stat_user_tables) AS tables,
             d.xact_commit::text AS commits, d.xact_rollback::text AS rollbacks, d.sessions::text AS sessions
        FROM pg_stat_database d WHERE d.datname = current_database()`);
    const [row] = rows;
    const tables = Object.fromEntries(Object.entries(row.tables ?? {}).map(([name, [inserted, updated, deleted]]) => [name, { inserted, updated, deleted }]));
    return { tables, walBytes: lsnBytes(row.lsn), commits: Number(row.commits), rollbacks: Number(row.rollbacks), sessions: Number(row.sessions), cpuMs: serverCpuMs(postmasterPidFile) };
  } finally {
    await client.end();
  }
}

/** The server's CPU ms for one connection that runs `SELECT 1` and ends, on average over a few in a row. */
async function connectionCpuMs(url, postmasterPidFile) {
  const before = serverCpuMs(postmasterPidFile);
  for (let index = 0; index < CALIBRATION_CONNECTIONS; index++) {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query("SELECT 1");
    await client.end();
  }
  // Let the last backends exit and be reaped, so that their time is counted.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const after = serverCpuMs(postmasterPidFile);
  return before === null || after === null ? null : Math.round(((after - before) / CALIBRATION_CONNECTIONS) * 100) / 100;
}

/** A WAL position "16/B374D848" as a byte offset. */
function lsnBytes(lsn) {
  const [high, low] = lsn.split("/");
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`);
}

const CLOCK_TICKS = existsSync("/proc/self/stat") ? Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100 : 100;

/** CPU ms used so far by the server: the postmaster, its live children, and the children it reaped. Null without /proc. */
function serverCpuMs(postmasterPidFile) {
  if (!existsSync("/proc/self/stat") || !existsSync(postmasterPidFile)) return null;
  const postmaster = Number(readFileSync(postmasterPidFile, "utf8").split("\n")[0]);
  const fieldsOf = (pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
      return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    } catch {
      return null; // exited meanwhile: its time moves to the postmaster's reaped children
    }
  };
  const own = fieldsOf(postmaster);
  if (!own) return null;
  // utime, stime, cutime, cstime are fields 14–17 of stat, 11–14 after "pid (comm) ".
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = fieldsOf(entry);
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return (ticks * 1000) / CLOCK_TICKS;
}

/**
 * What the database did between two readings, per delivery. `ownSessions`: sessions of one
 * statement each that the bench itself ran meanwhile besides the first reading (its polls of
 * /admin/stats), taken out. `connectionCpuMs`: what one connection costs the server (benchPostgres).
 */
export function postgresCostPerDelivery(before, after, deliveries, { ownSessions = 0, connectionCpuMs = null } = {}) {
  const per = (value) => Math.round((value / deliveries) * 100) / 100;
  const byTable = {};
  let inserted = 0;
  let updated = 0;
  let deleted = 0;
  let effectRows = 0;
  for (const [name, now] of Object.entries(after.tables)) {
    const then = before.tables[name] ?? { inserted: 0, updated: 0, deleted: 0 };
    const change = { inserted: now.inserted - then.inserted, updated: now.updated - then.updated, deleted: now.deleted - then.deleted };
    if (change.inserted + change.updated + change.deleted === 0) continue;
    // Per delivery, and the rows themselves (a table the sweeper writes now and then rounds to 0 per delivery).
    byTable[name] = { inserted: per(change.inserted), updated: per(change.updated), deleted: per(change.deleted), rows: change.inserted + change.updated + change.deleted };
    inserted += change.inserted;
    updated += change.updated;
    deleted += change.deleted;
    if (name === EFFECT_TABLE) effectRows += change.inserted + change.updated + change.deleted;
  }
  // The first reading's own session (its start-up transaction and its statement) lands after it;
  // the second's is not counted yet. Every session's start-up transaction is taken out too.
  const readings = 1 + ownSessions;
  const sessions = after.sessions - before.sessions;
  const connections = sessions - readings;
  const cpuMs = before.cpuMs === null || after.cpuMs === null ? null : after.cpuMs - before.cpuMs;
  const written = inserted + updated + deleted;
  return {
    rowsWritten: per(written),
    rowsWrittenWithoutEffect: per(written - effectRows),
    inserted: per(inserted),
    updated: per(updated),
    deleted: per(deleted),
    byTable,
    walBytes: per(Number(after.walBytes - before.walBytes)),
    transactions: per(after.commits - before.commits - sessions - readings),
    rollbacks: per(after.rollbacks - before.rollbacks),
    connections: per(connections),
    cpuMs: cpuMs === null ? null : per(cpuMs),
    connectionCpuMs,
    cpuMsWithoutConnections: cpuMs === null || connectionCpuMs === null ? null : per(cpuMs - sessions * connectionCpuMs),
  };
}
