/**
 * The ingest write in Postgres, group-committed: deliveries that reach one isolate while an earlier
 * insert is in flight are written together, as ONE multi-row `INSERT … ON CONFLICT DO NOTHING
 * RETURNING source, id`, once it lands. The same scheme as D1's (store/d1/group-commit.ts, which says
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
 * The lane is generic (`recordGrouped` takes a `GroupWriter`): D1's store/d1/group-commit.ts is the same
 * lane, written for D1's batch; with a D1 `GroupWriter` (one insert's `meta.changes`, a batch's) it
 * could be this one.
 */
import { isoTime } from "../clock";
import type { NewDelivery, RecordOutcome } from "../new-delivery";
import { COUNTED_THROUGH } from "../snapshot";
import type { WaitUntil } from "../store";
import { pgText, withClient, type Queryable } from "./client";

/** The longest a group waits for the write before it: a slow write must not hold up the next. */
export const MAX_WAIT_MS = 50;
/** A group is one statement and one transaction: keep it to a size that commits quickly. */
export const MAX_GROUP_SIZE = 100;
/** Bodies (and headers) per group, in bytes; a larger delivery is written alone. */
export const MAX_GROUP_BYTES = 1024 * 1024;

/** The writes of a lane: what differs between the stores. */
export interface GroupWriter<T> {
  /** Writes one item alone; true when it was new. Throws when the database fails. */
  one(item: T): Promise<boolean>;
  /** Writes items in one round trip: whether each was new, in order. Throws when the database fails. */
  group(items: readonly T[]): Promise<boolean[]>;
}

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
    values.push(
      delivery.source,
      delivery.id,
      delivery.eventType === null ? null : pgText(delivery.eventType),
      delivery.body,
      isoTime(delivery.receivedAtMs),
      delivery.contentDigest ?? null,
      delivery.headers ?? null,
    );
    // Typed in every row: a VALUES list in INSERT … SELECT does not take its types from the table.
    return `($${at + 1}::text, $${at + 2}::text, $${at + 3}::text, $${at + 4}::bytea, $${at + 5}::text, $${at + 6}::bytea, $${at + 7}::jsonb)`;
  });
  const result = await db.query<{ source: string; id: string }>(
    `WITH mark AS (SELECT value FROM inbox_marks WHERE name = '${COUNTED_THROUGH}' FOR KEY SHARE)
     INSERT INTO deliveries (source, id, event_type, status, attempts, body, received_at, updated_at, content_digest, headers)
     SELECT v.source, v.id, v.event_type, 'received', 0, v.body, GREATEST(v.now, (SELECT value FROM mark)), v.now, v.content_digest, v.headers
       FROM (VALUES ${rows.join(", ")}) AS v (source, id, event_type, body, now, content_digest, headers)
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

// The lane: the same logic as store/d1/group-commit.ts, over any `GroupWriter`.

interface Group<T> {
  readonly items: T[];
  bytes: number;
  /** Whether each item was new, in order; set when the group is opened. */
  written: Promise<boolean[]>;
}

/** One binding's writes from this isolate. */
interface Lane<T> {
  /** The latest write sent or about to be sent, until it settles. */
  inFlight: Promise<unknown> | null;
  /** The group waiting behind it, still open to newcomers. */
  forming: Group<T> | null;
}

const lanes = new WeakMap<object, Lane<NewDelivery>>();

/**
 * `recordDelivery` over any writer; `binding` keys the lane (the deliveries of one binding group
 * together). With no write in flight a delivery is written at once, alone; else it joins the group
 * forming behind that write, which the group's first member sends under its own request. A group
 * that fails as a whole is written again member by member, each from its own request.
 */
export async function recordGrouped(binding: object, ctx: WaitUntil, delivery: NewDelivery, writer: GroupWriter<NewDelivery>): Promise<RecordOutcome> {
  let lane = lanes.get(binding);
  if (!lane) lanes.set(binding, (lane = { inFlight: null, forming: null }));

  const size = delivery.body.byteLength + (delivery.headers?.length ?? 0);
  if (lane.inFlight === null || size > MAX_GROUP_BYTES) {
    const write = writer.one(delivery);
    if (lane.inFlight === null) track(lane, ctx, write);
    return outcome(await write);
  }

  const open = lane.forming;
  const group = open && open.items.length < MAX_GROUP_SIZE && open.bytes + size <= MAX_GROUP_BYTES ? open : lead(lane, ctx, writer);
  const index = group.items.push(delivery) - 1;
  group.bytes += size;
  let stored: boolean[];
  try {
    stored = await inThisRequest(group.written);
  } catch {
    // The group failed as a whole: this delivery's own insert decides, and may throw. When it finds
    // the row there, the group may have landed before its connection failed, and then the row is
    // this request's and must be enqueued: so it counts as stored (store/d1/group-commit.ts).
    await writer.one(delivery);
    return "stored";
  }
  return outcome(stored[index]!);
}

/**
 * The group's result as a promise of the calling request: the group's own promise belongs to the
 * leader's request, and a member that awaited it directly would run the rest of its request in the
 * leader's (workerd: "Cannot perform I/O on behalf of a different request").
 */
function inThisRequest<T>(promise: Promise<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => void promise.then(resolve, reject));
}

/** Opens a group behind the write in flight; the calling request sends it. */
function lead<T>(lane: Lane<T>, ctx: WaitUntil, writer: GroupWriter<T>): Group<T> {
  const previous = lane.inFlight;
  const group: Group<T> = { items: [], bytes: 0, written: Promise.resolve([]) };
  lane.forming = group;
  group.written = (async () => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const waited = new Promise((resolve) => (timer = setTimeout(resolve, MAX_WAIT_MS)));
    await Promise.race([previous?.catch(() => {}), waited]);
    clearTimeout(timer);
    if (lane.forming === group) lane.forming = null; // closed: newcomers form the next group
    return writer.group(group.items);
  })();
  track(lane, ctx, group.written);
  return group;
}

/** Makes `write` the lane's write in flight until it settles, and keeps it going under waitUntil. */
function track<T>(lane: Lane<T>, ctx: WaitUntil, write: Promise<unknown>): void {
  lane.inFlight = write;
  ctx.waitUntil(
    write.then(
      () => release(lane, write),
      () => release(lane, write),
    ),
  );
}

function release<T>(lane: Lane<T>, write: Promise<unknown>): void {
  if (lane.inFlight === write) lane.inFlight = null;
}

function outcome(stored: boolean): RecordOutcome {
  return stored ? "stored" : "duplicate";
}
