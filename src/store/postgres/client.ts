/**
 * How the Postgres store talks to its database: `pg` (node-postgres, Cloudflare's recommendation)
 * through the Hyperdrive binding: a client per operation for a request, a few shared ones for a
 * queue batch or a sweep.
 *
 * - For a request, a client is opened for one operation (a statement, a transaction, a group
 *   commit) and ended when it is done, in `finally` (`withClient`, `clientPerOperation`). A queue
 *   batch or a sweep runs many operations: they share up to a few clients, ended when it is done
 *   (`sharedClients`). Never one cached across requests: workerd refuses I/O on an object made by
 *   another request, and Hyperdrive pools the real connections anyway, so a new client costs a
 *   connect to Hyperdrive nearby, not to the database.
 * - Hyperdrive pools by transaction: two statements of one client may run on two server connections
 *   unless they share a transaction. So nothing here relies on session state: no `SET` (outside a
 *   transaction), no named prepared statements, no advisory locks; what must see one snapshot or
 *   commit together runs in one transaction (`ownTransaction`, queryable.ts).
 * - Errors are sorted as D1's are (store/d1/index.ts `isStatementError`): a statement the database refused
 *   on its own account (a constraint, a trigger, bad SQL, a wrong type) is the statement's fault;
 *   anything else (a lost connection, a serialization failure, a database shutting down, no
 *   SQLSTATE at all) is infrastructure, retried without using up an attempt.
 *
 * Values bind as pg binds them: strings, numbers, booleans and bigints as text, a Uint8Array as
 * bytes (bytea). Results come back typed by pg: bigint (int8, and COUNT(*)) as a string, bytea as a
 * Buffer, jsonb parsed; the callers convert (`toNumber`, `toBytes`).
 */
import { Client, DatabaseError, Pool } from "pg";
import { DEFAULT_STORE_TIMEOUT_SECONDS } from "../timeout";
import type { Queryable } from "./queryable";

/** What a query function takes as its first argument (queryable.ts): pg's `Client` is one. */
export type { Queryable };

/** A connect that takes longer than this fails as infrastructure, rather than hang until the lease runs out. */
export const CONNECT_TIMEOUT_MS = 10_000;

/**
 * The wait for any one query's answer (STORE_TIMEOUT_SECONDS, store/timeout.ts), kept by pg on the
 * client's side: a statement stuck behind a lock (a `LOCK deliveries` held in psql) or running
 * long fails as infrastructure instead of hanging while the lease is renewed through it. Server-side
 * timeouts are not set as startup parameters: they pass through Hyperdrive untested here, and a
 * refused parameter would fail every connection. The client that timed out is ended (withClient,
 * sharedClients), so a transaction it held open rolls back; a lone statement may still land later,
 * which every caller allows for (fenced writes, the commit token).
 */
function queryTimeout(timeoutMs: number) {
  return { query_timeout: timeoutMs };
}

/**
 * Runs `fn` with a client of its own, connected to the database behind `hyperdrive`, and ends it
 * whatever happens. A failed connect throws (infrastructure).
 * @example
 * const rows = await withClient(env.HYPERDRIVE, async (db) => (await db.query("SELECT 1 AS one")).rows);
 */
export async function withClient<T>(hyperdrive: Hyperdrive, fn: (db: Queryable) => Promise<T>, timeoutMs = DEFAULT_STORE_TIMEOUT_SECONDS * 1000): Promise<T> {
  const client = new Client({ connectionString: hyperdrive.connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, ...queryTimeout(timeoutMs) });
  // An error on an idle connection is emitted, not thrown; unheard it would crash the isolate.
  // The query in flight, if any, is rejected with it anyway.
  client.on("error", () => {});
  await client.connect();
  try {
    return await fn(client);
  } finally {
    // A failed end (the connection already gone) changes nothing for the caller.
    await client.end().catch(() => {});
  }
}

/**
 * Where a store's operations get their clients: `run` hands `fn` a client that nobody else uses
 * until `fn` is done (so a transaction opened in it is `fn`'s alone), and `close` ends what is held.
 * `fn` must not call `run` again: with a bounded pool that could wait for itself.
 */
export interface Connections {
  run<T>(fn: (db: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A client of its own for each operation (`withClient`): for a request, which holds nothing open. */
export function clientPerOperation(hyperdrive: Hyperdrive, timeoutMs = DEFAULT_STORE_TIMEOUT_SECONDS * 1000): Connections {
  return { run: (fn) => withClient(hyperdrive, fn, timeoutMs), close: async () => undefined };
}

/**
 * Clients shared by the operations of one queue batch or sweep, up to `max` at once, opened as
 * they are first needed and kept until `close()`, which the caller must reach (in `finally`): a
 * batch's claims, marks and commits then cost a few connections rather than one each. A client
 * that failed with anything but a statement error (a lost connection, a commit left in doubt, a
 * bug mid-transaction) is ended rather than handed to the next operation. Scoped to the batch's
 * invocation, never kept across requests (workerd refuses I/O on another request's socket).
 * @example
 * const connections = sharedClients(env.HYPERDRIVE, 8);
 * try { await connections.run((db) => db.query("SELECT 1")); } finally { await connections.close(); }
 */
export function sharedClients(hyperdrive: Hyperdrive, max: number, timeoutMs = DEFAULT_STORE_TIMEOUT_SECONDS * 1000): Connections {
  let pool: Pool | null = null;
  let closed = false;
  const open = () => {
    const created = new Pool({
      connectionString: hyperdrive.connectionString,
      connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      ...queryTimeout(timeoutMs),
      max,
      // Idle clients stay until close(): a delivery's claim and its commit, a handler's run apart, reuse one.
      idleTimeoutMillis: 0,
    });
    // An idle client's error (the server gone) is emitted by the pool, which drops that client; unheard it would crash the isolate.
    created.on("error", () => {});
    return created;
  };
  return {
    async run(fn) {
      // An operation still running when its batch was closed (a worker the batch stopped waiting
      // for) gets a client of its own, ended after it, rather than a pool nobody would close.
      if (closed) return withClient(hyperdrive, fn, timeoutMs);
      pool ??= open();
      const client = await pool.connect();
      client.on("error", ignore);
      let broken = false;
      try {
        return await fn(client);
      } catch (error) {
        broken = !isStatementError(error);
        throw error;
      } finally {
        client.off("error", ignore);
        client.release(broken);
      }
    },
    async close() {
      closed = true;
      const ending = pool;
      pool = null;
      // A failed end (connections already gone) changes nothing for the caller.
      await ending?.end().catch(() => undefined);
    },
  };
}

const ignore = () => undefined;

/**
 * The SQLSTATE classes (the code's first two characters) of a statement the database refused on its
 * own account: the statement, its values or the schema it meets are at fault, and running it again
 * the same way will fail the same way. Among them 22 (data exception: a bad value, a NUL in text),
 * 23 (a constraint), 42 (syntax, a missing table, no privilege), P0 (PL/pgSQL: our triggers'
 * `lease_lost` and `stale_version`), 0A (not supported), 2F/39 (a function's own error).
 * The rest are the database's trouble, not the statement's: 08 (connection), 25 (e.g. a read-only
 * database after a failover), 28 (authentication), 3D (no such database), 40 (serialization,
 * deadlock), 53 (out of resources), 55 (a lock not available), 57 (shut down, cancelled, timed out),
 * 58 (system), XX (internal), and anything not listed.
 */
const STATEMENT_CLASSES = new Set(["03", "09", "0A", "0B", "0F", "0L", "0P", "0Z", "20", "21", "22", "23", "24", "26", "27", "2B", "2D", "2F", "34", "38", "39", "3B", "3F", "42", "44", "54", "P0"]);
/** In class 40, a constraint that could only be checked at commit: the statement's fault too. */
const TRANSACTION_INTEGRITY_CONSTRAINT_VIOLATION = "40002";

/** The SQLSTATE of an error the database sent; null for anything else (the network, pg itself). */
export function sqlState(error: unknown): string | null {
  return error instanceof DatabaseError && typeof error.code === "string" ? error.code : null;
}

/**
 * True when the database refused a statement itself (see STATEMENT_CLASSES): the delivery's own
 * effects are at fault, and its attempt counts like a handler error. False for infrastructure.
 * @example
 * isStatementError(uniqueViolation); // true: SQLSTATE 23505
 * isStatementError(new Error("Connection terminated unexpectedly")); // false
 */
export function isStatementError(error: unknown): boolean {
  const code = sqlState(error);
  if (code === null) return false;
  return code === TRANSACTION_INTEGRITY_CONSTRAINT_VIOLATION || STATEMENT_CLASSES.has(code.slice(0, 2));
}

/** True when `error` is the exception a trigger of ours raised with `message` (SQLSTATE P0001). */
export function isRaised(error: unknown, message: string): boolean {
  return sqlState(error) === "P0001" && (error as DatabaseError).message === message;
}

/**
 * A number from pg: bigint and COUNT(*) come back as strings. Every number of the inbox (tokens
 * from a millisecond clock, counts, versions) is within 2^53.
 */
export function toNumber(value: unknown): number {
  return typeof value === "number" ? value : Number(value);
}

/** `toNumber`, keeping NULL. */
export function toNumberOrNull(value: unknown): number | null {
  return value === null || value === undefined ? null : toNumber(value);
}

/**
 * Bytes from pg (bytea comes back as a Buffer) as a plain Uint8Array of their own: a Buffer's
 * `slice` is a view where a Uint8Array's is a copy, and a small Buffer's `buffer` is a pool shared
 * with others.
 */
export function toBytes(value: Uint8Array): Uint8Array {
  return new Uint8Array(value);
}

/**
 * Text as Postgres stores it: a NUL character is refused in text and jsonb (SQLSTATE 22021/22P05)
 * where SQLite keeps it, and jsonb refuses a lone UTF-16 surrogate (`\ud83d` without its pair,
 * 22P02) that JSON.stringify writes as an escape. The store writes text of others' making (a
 * handler's error message, an event type) through this, so that such a character does not fail
 * the write that records it: each becomes U+FFFD.
 * @example
 * pgText("a\u0000b\ud83d"); // "a\uFFFDb\uFFFD"
 */
export function pgText(text: string): string {
  return text.replaceAll("\u0000", "\uFFFD").toWellFormed();
}
