/**
 * Group commit of the ingest insert: deliveries that reach one isolate while an earlier insert
 * is in flight are written together, as one D1 batch, once it lands.
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
import type { NewDelivery, RecordOutcome } from "../new-delivery";
import { insertDelivery } from "./record";

/** The longest a group waits for the write before it: a slow write must not hold up the next. */
export const MAX_WAIT_MS = 50;
/** A batch is one transaction: keep it to a size that commits quickly. */
export const MAX_GROUP_SIZE = 100;
/** Bodies per batch, in bytes; a larger delivery is written alone. */
export const MAX_GROUP_BYTES = 1024 * 1024;

/** The part of an execution context this needs (Hono's and the runtime's types differ). */
interface WaitUntil {
  waitUntil(promise: Promise<unknown>): void;
}

interface Group {
  readonly deliveries: NewDelivery[];
  bytes: number;
  /** `meta.changes` of each delivery's insert, in order; set when the group is opened. */
  written: Promise<number[]>;
}

/** One database binding's writes from this isolate. */
interface Lane {
  readonly db: D1Database;
  /** The latest write sent or about to be sent, until it settles. */
  inFlight: Promise<unknown> | null;
  /** The group waiting behind it, still open to newcomers. */
  forming: Group | null;
}

const lanes = new WeakMap<D1Database, Lane>();

/**
 * Stores a delivery unless one with the same (source, id), or the same (source, content digest),
 * exists. Throws when D1 fails.
 */
export async function recordDeliveryGrouped(db: D1Database, ctx: WaitUntil, delivery: NewDelivery): Promise<RecordOutcome> {
  let lane = lanes.get(db);
  if (!lane) lanes.set(db, (lane = { db, inFlight: null, forming: null }));

  const size = delivery.body.byteLength + (delivery.headers?.length ?? 0);
  if (lane.inFlight === null || size > MAX_GROUP_BYTES) {
    const write = insertDelivery(db, delivery).run();
    if (lane.inFlight === null) track(lane, ctx, write);
    return outcome((await write).meta.changes);
  }

  const open = lane.forming;
  const group = open && open.deliveries.length < MAX_GROUP_SIZE && open.bytes + size <= MAX_GROUP_BYTES ? open : lead(lane, ctx);
  const index = group.deliveries.push(delivery) - 1;
  group.bytes += size;
  let changes: number[];
  try {
    changes = await inThisRequest(group.written);
  } catch {
    // The batch failed as a whole: this delivery's own insert decides, and may throw. When it
    // finds the row there, the batch may have landed before it reported its error, and then the
    // row is this request's and must be enqueued: so it counts as stored. Had it been a genuine
    // duplicate, the extra queue message is harmless (the lease and the row dedupe it), and the
    // provider gets its 200 either way.
    await insertDelivery(db, delivery).run();
    return "stored";
  }
  return outcome(changes[index]!);
}

/**
 * The group's result as a promise of the calling request. `group.written` belongs to the request
 * that leads the group: awaiting it directly ran the rest of a member's request (its Response,
 * its own insert after a failed batch) inside the leader's request, and under load workerd then
 * failed the member with a 500, "Cannot perform I/O on behalf of a different request". A promise
 * made here and settled from the leader's request is handed back to this one.
 */
function inThisRequest<T>(promise: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => void promise.then(resolve, reject));
}

/** Opens a group behind the write in flight; the calling request sends it. */
function lead(lane: Lane, ctx: WaitUntil): Group {
  const previous = lane.inFlight;
  const group: Group = { deliveries: [], bytes: 0, written: Promise.resolve([]) };
  lane.forming = group;
  group.written = (async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise((resolve) => (timer = setTimeout(resolve, MAX_WAIT_MS)));
    await Promise.race([previous?.catch(() => {}), waited]);
    clearTimeout(timer);
    if (lane.forming === group) lane.forming = null; // closed: newcomers form the next group
    const results = await lane.db.batch(group.deliveries.map((delivery) => insertDelivery(lane.db, delivery)));
    return results.map((result) => result.meta.changes);
  })();
  track(lane, ctx, group.written);
  return group;
}

/** Makes `write` the lane's write in flight until it settles, and keeps it going under waitUntil. */
function track(lane: Lane, ctx: WaitUntil, write: Promise<unknown>): void {
  lane.inFlight = write;
  ctx.waitUntil(
    write.then(
      () => release(lane, write),
      () => release(lane, write),
    ),
  );
}

function release(lane: Lane, write: Promise<unknown>): void {
  if (lane.inFlight === write) lane.inFlight = null;
}

function outcome(changes: number): RecordOutcome {
  return changes > 0 ? "stored" : "duplicate";
}
