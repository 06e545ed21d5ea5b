/**
 * SQL against whichever store the Worker runs, for the tests that run on both (test/store-suites.ts):
 * D1 under `npm test`, Postgres under `npm run test:postgres` (each such file in a schema of its own:
 * test/setup/postgres-schema.ts). The statements are portable `sql` statements (src/sql.ts), so their
 * text must be SQL both databases accept: `INSERT … ON CONFLICT DO NOTHING`, not `INSERT OR IGNORE`;
 * no SQLite-only functions (`strftime`, `x'…'` literals, `max(a, b)`), no Postgres-only ones.
 *
 * Results are normalised so that both stores' rows compare alike, as D1 shows them:
 * - integers are numbers (pg returns bigint, `COUNT(*)` and `SUM(…)` as strings);
 * - a boolean (`handled`) is 1 or 0, as D1 stores it;
 * - bytes (a BLOB in D1, bytea in Postgres: `body`, `content_digest`) are a Uint8Array, whichever
 *   shape D1 hands them in (an ArrayBuffer or an array of byte values);
 * - a JSON column (`headers`, `attempt_log`: text in D1, jsonb in Postgres) is JSON text, as D1 holds
 *   it. Parse it before comparing: jsonb keeps neither D1's key order nor its spacing.
 * Times are ISO text in both schemas already.
 *
 * The Postgres side opens a pg client of its own per call, on the Worker's own
 * `env.HYPERDRIVE.connectionString`, and ends it after use, as the store does.
 */
import { env } from "cloudflare:workers";
import { Client, types } from "pg";
import { openStore } from "../../src/store";
import { decodeBody } from "../../src/store/body-encoding";
import type { NewDelivery, RecordOutcome } from "../../src/store/new-delivery";
import { sql, type SqlStatement } from "../../src/sql";

export type StoreName = "d1" | "postgres";

/**
 * The store this suite runs on (src/store/index.ts picks it the same way). For the rare assertion
 * that must differ between the two, such as a database's own error text; keep those few, and say why.
 */
export const storeName: StoreName = env.HYPERDRIVE ? "postgres" : "d1";

/** A row as `rows` returns it: column name to normalised value. */
export type Row = Record<string, unknown>;

/** pg's type ids of the columns it would not return as D1 does. */
const PG = { bool: 16, bytea: 17, int8: 20, json: 114, numeric: 1700, jsonb: 3802 } as const;

/** Text values from Postgres, parsed into what D1 would have returned. */
const pgTypes = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === PG.int8 || oid === PG.numeric) return (text: string) => Number(text);
    if (oid === PG.bool) return (text: string) => (text === "t" ? 1 : 0);
    // Compact JSON text, as JSON.stringify writes it (and D1's columns hold it).
    if (oid === PG.json || oid === PG.jsonb) return (text: string) => JSON.stringify(JSON.parse(text));
    if (oid === PG.bytea) {
      const parse = types.getTypeParser(PG.bytea, "text") as (text: string) => Uint8Array;
      return (text: string) => new Uint8Array(parse(text));
    }
    return types.getTypeParser(oid, format ?? "text");
  },
};

/** Runs `work` on a pg client of its own, on the Worker's database (its schema, for this file). */
async function withPg<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: env.HYPERDRIVE!.connectionString, types: pgTypes as never });
  // An error on an idle connection is emitted, not thrown: unheard, it would crash the isolate.
  client.on("error", () => {});
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end().catch(() => {});
  }
}

/** A statement as D1 takes it: `?N` placeholders, booleans as 1/0 and bigints as numbers (store/d1/index.ts). */
function d1Prepared(statement: SqlStatement): D1PreparedStatement {
  const values = statement.values.map((value) => (typeof value === "boolean" ? (value ? 1 : 0) : typeof value === "bigint" ? Number(value) : value));
  return env.DB.prepare(statement.render((position) => `?${position}`)).bind(...values);
}

/** A D1 row's BLOBs as Uint8Array (D1 hands them over as an ArrayBuffer or an array of byte values). */
function d1Row(row: Row): Row {
  const out: Row = {};
  for (const [name, value] of Object.entries(row)) {
    out[name] = value instanceof ArrayBuffer ? new Uint8Array(value) : Array.isArray(value) ? Uint8Array.from(value as number[]) : value;
  }
  return out;
}

/**
 * The rows `statement` returns, normalised (see the module's doc).
 * @example
 * const [row] = await rows(sql`SELECT status, handled FROM deliveries WHERE source = ${"stripe"} AND id = ${"evt_1"}`);
 */
export async function rows<T = Row>(statement: SqlStatement): Promise<T[]> {
  if (storeName === "d1") {
    const { results } = await d1Prepared(statement).all<Row>();
    return results.map(d1Row) as T[];
  }
  return withPg(async (client) => (await client.query(statement.render((position) => `$${position}`), [...statement.values])).rows as T[]);
}

/** The first row `statement` returns, or null. */
export async function firstRow<T = Row>(statement: SqlStatement): Promise<T | null> {
  return (await rows<T>(statement))[0] ?? null;
}

/**
 * Runs `statements` in one transaction (a D1 batch; BEGIN … COMMIT in Postgres): all of them or,
 * when one fails, none. Returns the rows they changed, in total.
 * @example
 * await exec(sql`UPDATE deliveries SET status = 'failed', error = 'boom' WHERE source = ${source}`);
 */
export async function exec(...statements: SqlStatement[]): Promise<number> {
  if (storeName === "d1") {
    const results = await env.DB.batch(statements.map(d1Prepared));
    return results.reduce((sum, result) => sum + result.meta.changes, 0);
  }
  return withPg(async (client) => {
    let changed = 0;
    await client.query("BEGIN");
    try {
      for (const statement of statements) changed += (await client.query(statement.render((position) => `$${position}`), [...statement.values])).rowCount ?? 0;
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK").catch(() => {});
      throw error;
    }
    return changed;
  });
}

/**
 * The number `statement` counts: its first row's first column (e.g. `SELECT COUNT(*) AS n …`).
 * @example
 * expect(await count(sql`SELECT COUNT(*) AS n FROM payments WHERE delivery_id = ${id}`)).toBe(1);
 */
export async function count(statement: SqlStatement): Promise<number> {
  const row = await firstRow(statement);
  return row ? Number(Object.values(row)[0]) : 0;
}

/** A `deliveries` row as `SELECT *` reads it in either store, normalised. */
export interface DeliveryRow {
  source: string;
  id: string;
  event_type: string | null;
  status: string;
  attempts: number;
  error: string | null;
  handled: number | null;
  /** The body as received: `deliveryRow(s)` decode the stored bytes (see `storedBody` for those). */
  body: Uint8Array | null;
  /** How the stored body is encoded (src/store/body-encoding.ts): "deflate-raw", or null as received. */
  body_encoding: string | null;
  received_at: string;
  updated_at: string;
  lease_token: number | null;
  commit_token: number | null;
  content_digest: Uint8Array | null;
  /** JSON text (see the module's doc). */
  headers: string | null;
  /** JSON text (see the module's doc). */
  attempt_log: string | null;
  /** Copies answered "duplicate" since it was stored, and when the last came (migrations/0009). */
  duplicates: number;
  last_duplicate_at: string | null;
  /** How many subscribers it was fanned out to; null: one (migrations/0012). */
  fanout: number | null;
}

/** A row's body as received: bodies are stored compressed (src/store/body-encoding.ts). */
function withBodyAsReceived(row: DeliveryRow): DeliveryRow {
  return row.body === null ? row : { ...row, body: decodeBody(row.body, row.body_encoding) };
}

/** Every delivery (of `source`), by source and id, each body as received. */
export async function deliveryRows(source?: string): Promise<DeliveryRow[]> {
  const found = await rows<DeliveryRow>(
    source === undefined ? sql`SELECT * FROM deliveries ORDER BY source, id` : sql`SELECT * FROM deliveries WHERE source = ${source} ORDER BY id`,
  );
  return found.map(withBodyAsReceived);
}

/** The delivery (source, id), its body as received, or null. */
export async function deliveryRow(source: string, id: string): Promise<DeliveryRow | null> {
  const row = await firstRow<DeliveryRow>(sql`SELECT * FROM deliveries WHERE source = ${source} AND id = ${id}`);
  return row && withBodyAsReceived(row);
}

/** The body of (source, id) as the store keeps it, and its encoding; null when there is no such row. */
export async function storedBody(source: string, id: string): Promise<{ body: Uint8Array | null; encoding: string | null } | null> {
  const row = await firstRow<{ body: Uint8Array | null; body_encoding: string | null }>(sql`SELECT body, body_encoding FROM deliveries WHERE source = ${source} AND id = ${id}`);
  return row && { body: row.body, encoding: row.body_encoding };
}

/** How many deliveries of `source` hold `bytes` as their body as received (stored compressed or not). */
export async function countWithBody(source: string, bytes: Uint8Array): Promise<number> {
  const found = await rows<{ body: Uint8Array | null; body_encoding: string | null }>(sql`SELECT body, body_encoding FROM deliveries WHERE source = ${source} AND body IS NOT NULL`);
  const same = (body: Uint8Array) => body.byteLength === bytes.byteLength && body.every((byte, index) => byte === bytes[index]);
  return found.filter((row) => same(decodeBody(row.body!, row.body_encoding))).length;
}

/**
 * Stores a delivery through the store, as the receiver does (its group commit included), and waits
 * for the write's background part. Unlike a plain INSERT, it writes what each store writes
 * (D1's body chunks, Postgres's bytea) and dates the row as the store dates it (but for the walk's
 * mark, below).
 *
 * A test that back-dates a delivery means one that landed then. D1 dates an insert that lands after
 * its sweeper's walk passed the receiver's clock at the walk's mark (store/d1/fresh.ts), and another
 * test's sweep may have moved that mark to the present: so the walk starts afresh first (no row
 * is behind an unset mark), and the row keeps its date.
 * @example
 * await recordDelivery({ source: "stripe", id: "evt_1", eventType: "invoice.paid", body, receivedAtMs: Date.now() });
 */
export async function recordDelivery(delivery: NewDelivery): Promise<RecordOutcome> {
  if (storeName === "d1") await env.DB.prepare("DELETE FROM inbox_marks WHERE name = 'fresh_from'").run();
  const background: Promise<unknown>[] = [];
  const outcome = await openStore(env).record(delivery, { waitUntil: (promise) => void background.push(promise) });
  await Promise.all(background);
  return outcome;
}

/** The message of a unique constraint's violation: each database words its own. */
export const UNIQUE_VIOLATION = storeName === "d1" ? /UNIQUE constraint failed/ : /duplicate key value violates unique constraint/;
