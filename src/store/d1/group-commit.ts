/**
 * Group commit of the ingest insert in D1: deliveries that reach one isolate while an earlier insert
 * is in flight are written together, as one D1 batch, once it lands. The lane is shared with
 * Postgres (store/group-commit.ts); this file is its D1 writer (`d1Writer`) and says why the lane
 * is as it is.
 *
 * With no write in flight a delivery is written at once, alone: quiet traffic waits for
 * nothing. Under load each D1 round trip carries every delivery that queued up during the
 * previous one, so the database sees fewer, larger transactions (D1 runs one query at a time
 * per database). Each request still learns whether its own row was new: a batch returns one
 * result per statement, in order, and `ON CONFLICT DO NOTHING` reports 0 changes for a
 * duplicate, even for two copies in the same batch (by id or by content digest alike).
 *
 * Who does the I/O: the first delivery to queue up leads its group. Its request waits for the
 * write in flight (at most MAX_WAIT_MS), closes the group and sends the batch, under its own
 * `waitUntil` so the write completes even if its caller hangs up; the others only await the
 * result. If the batch fails (D1 unavailable, or a row the database refuses), every member
 * writes its own row alone from its own request, so one bad row fails only its own delivery,
 * and a failure surfaces as a failure (503), never as stored.
 */
import { recordGrouped, type GroupWriter } from "../group-commit";
import type { NewDelivery, RecordOutcome } from "../new-delivery";
import type { WaitUntil } from "../store";
import { insertDelivery } from "./record";

// The lane is shared with Postgres (store/group-commit.ts); named here too for this store's tests.
export { MAX_GROUP_BYTES, MAX_GROUP_SIZE, MAX_WAIT_MS } from "../group-commit";

/**
 * Stores a delivery unless one with the same (source, id), or the same (source, content digest),
 * exists. Throws when D1 fails. Grouped with the deliveries of other requests to the same `db`
 * binding (its lane).
 */
export function recordDeliveryGrouped(db: D1Database, ctx: WaitUntil, delivery: NewDelivery): Promise<RecordOutcome> {
  return recordGrouped(db, ctx, delivery, d1Writer(db));
}

/**
 * The D1 writes: one insert alone, or a batch of one insert per delivery. A batch returns one
 * result per statement, in order, and `ON CONFLICT DO NOTHING` reports 0 changes for a duplicate,
 * even for two copies in the same batch.
 */
function d1Writer(db: D1Database): GroupWriter<NewDelivery> {
  return {
    one: async (delivery) => (await insertDelivery(db, delivery).run()).meta.changes > 0,
    group: async (deliveries) => (await db.batch(deliveries.map((delivery) => insertDelivery(db, delivery)))).map((result) => result.meta.changes > 0),
  };
}
