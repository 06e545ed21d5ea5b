/**
 * The ingest write in Postgres, group-committed: deliveries that reach one isolate while an earlier
 * insert is in flight are written together, as ONE multi-row `INSERT … ON CONFLICT DO NOTHING
 * RETURNING source, id`, once it lands. The same lane as D1's (store/group-commit.ts; store/d1/group-commit.ts says
 * why); only the write differs: where D1 sends a batch of one insert per delivery and reads each
 * one's `meta.changes`, Postgres inserts every row in one statement and returns the keys of the
 * rows it stored, so each member is stored iff its (source, id) came back.
 *
 * The database alone decides duplicates, as in D1: the statement has no conflict target, so both
 * uniqueness rules count, the primary key (source, id) and (source, content_digest), also between
 * two rows of the same statement (the rows are inserted in the order listed; a later one that
 * conflicts with an earlier one is skipped). Two members with the same key in one group: the first
 * is told "stored", the others "duplicate".
 *
 * The lane (when to write alone, when to group, what a failed group does) is store/group-commit.ts,
 * shared with D1; this file is its Postgres writer (`postgresWriter`).
 */
import { encodeBody } from "../body-encoding";
import { isoTime } from "../clock";
import { recordGrouped, type GroupWriter } from "../group-commit";
import type { NewDelivery, RecordOutcome } from "../new-delivery";
import { COUNTED_THROUGH } from "../snapshot";
import type { WaitUntil } from "../store";
import { pgText, withClient, type Queryable } from "./client";

// The lane is shared with D1 (store/group-commit.ts); named here too for this store's tests.
export { MAX_GROUP_BYTES, MAX_GROUP_SIZE, MAX_WAIT_MS, recordGrouped, type GroupWriter } from "../group-commit";

/**
 * Stores a delivery unless one with the same (source, id), or the same (source, content digest),
 * exists. Throws when the database fails. Grouped with the deliveries of other requests to the
 * same `hyperdrive` binding (its lane).
 * @example
 * const outcome = await recordDelivery(env.HYPERDRIVE, ctx, { source: "stripe", id: "evt_1", eventType: null, body, receivedAtMs: Date.now() });
 */
export function recordDelivery(hyperdrive: Hyperdrive, ctx: WaitUntil, delivery: NewDelivery): Promise<RecordOutcome> {
  return recordGrouped(hyperdrive, ctx, delivery, postgresWriter(hyperdrive));
}

/** The Postgres writes: each one a client of its own (client.ts), ended when its statement is. */
export function postgresWriter(hyperdrive: Hyperdrive): GroupWriter<NewDelivery> {
  return {
    one: async (delivery) => (await withClient(hyperdrive, (db) => insertDeliveries(db, [delivery])))[0]!,
    group: (deliveries) => withClient(hyperdrive, (db) => insertDeliveries(db, deliveries)),
  };
}

/**
 * Inserts `deliveries` in one statement and says which were new. A row's `received_at` is never
 * behind the overview's `counted_through` mark (store/d1/record.ts says why): `GREATEST` ignores the
 * mark while there is none (before the first count), as D1's `max` does its ''.
 *
 * Where Postgres differs: D1 runs one statement at a time, so the mark an insert reads is the mark
 * when it lands. Here the sweeper's walk may move the mark past the row while the insert is in
 * flight, and the walk cannot see the uncommitted row: it would be counted neither in the totals nor
 * past the mark. So the insert reads the mark `FOR KEY SHARE`, which the walk's `FOR UPDATE`
 * (postgres/overview.ts `lockCountedMark`) waits for, and which waits for the walk: an insert then
 * reads the mark the walk left. It is the lock a foreign key takes on its parent row, shared by every
 * insert at once; it holds an insert up only while a walk commits, once a sweep.
 * @example
 * const [stored] = await insertDeliveries(db, [delivery]);
 */
export async function insertDeliveries(db: Queryable, deliveries: readonly NewDelivery[]): Promise<boolean[]> {
  const values: unknown[] = [];
  const rows = deliveries.map((delivery) => {
    const at = values.length;
    // Stored compressed when that is smaller (store/body-encoding.ts), with its encoding.
    const body = encodeBody(delivery.body);
    values.push(
      delivery.source,
      delivery.id,
      delivery.eventType === null ? null : pgText(delivery.eventType),
      body.bytes,
      isoTime(delivery.receivedAtMs),
      delivery.contentDigest ?? null,
      delivery.headers ?? null,
      delivery.filtered === undefined || delivery.filtered === null ? null : pgText(delivery.filtered),
      body.encoding,
    );
    // Typed in every row: a VALUES list in INSERT … SELECT does not take its types from the table.
    return `($${at + 1}::text, $${at + 2}::text, $${at + 3}::text, $${at + 4}::bytea, $${at + 5}::text, $${at + 6}::bytea, $${at + 7}::jsonb, $${at + 8}::text, $${at + 9}::text)`;
  });
  const result = await db.query<{ source: string; id: string }>(
    `WITH mark AS (SELECT value FROM inbox_marks WHERE name = '${COUNTED_THROUGH}' FOR KEY SHARE)
     INSERT INTO deliveries (source, id, event_type, status, attempts, error, body, body_encoding, received_at, updated_at, content_digest, headers)
     SELECT v.source, v.id, v.event_type, CASE WHEN v.filtered IS NULL THEN 'received' ELSE 'done' END, 0, v.filtered, v.body, v.body_encoding,
            GREATEST(v.now, (SELECT value FROM mark)), v.now, v.content_digest, v.headers
       FROM (VALUES ${rows.join(", ")}) AS v (source, id, event_type, body, now, content_digest, headers, filtered, body_encoding)
     ON CONFLICT DO NOTHING
     RETURNING source, id`,
    values,
  );
  // Each stored key is claimed by the first member that has it; a later one with the same key is a duplicate.
  const stored = new Set(result.rows.map((row) => key(row.source, row.id)));
  return deliveries.map((delivery) => stored.delete(key(delivery.source, delivery.id)));
}

/** An unambiguous key of (source, id): neither part can fake the boundary. */
function key(source: string, id: string): string {
  return JSON.stringify([source, id]);
}
