/**
 * Group commit of the ingest insert, for both stores: deliveries that reach one isolate while an
 * earlier insert is in flight are written together, in one round trip, once it lands. The lane
 * (when to write alone, when to join the group forming behind the write in flight, who sends it,
 * what happens when it fails) is the same for both; only the writes differ, given as a
 * `GroupWriter`: D1 sends a batch of one insert per delivery (d1/group-commit.ts, which says why
 * each step is as it is), Postgres one multi-row `INSERT … ON CONFLICT DO NOTHING RETURNING`
 * (postgres/record.ts).
 *
 * With no write in flight a delivery is written at once, alone: quiet traffic waits for nothing.
 * Each request still learns whether its own row was new. If a group fails as a whole, every
 * member writes its own row alone from its own request, so one bad row fails only its own
 * delivery, and a failure surfaces as a failure (503), never as stored.
 */
import type { NewDelivery, RecordOutcome } from "./new-delivery";
import type { WaitUntil } from "./store";

/** The longest a group waits for the write before it: a slow write must not hold up the next. */
export const MAX_WAIT_MS = 50;
/** A group is one transaction (D1: one batch; Postgres: one statement): keep it to a size that commits quickly. */
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
 * Stores a delivery through `writer` (D1: d1/group-commit.ts `recordDeliveryGrouped`; Postgres:
 * postgres/record.ts `recordDelivery`), and says whether it was new; `binding` keys the lane (the deliveries of one binding group
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
    // the row there, the group may have landed before it reported its error, and then the row is
    // this request's and must be enqueued: so it counts as stored (d1/group-commit.ts).
    await writer.one(delivery);
    return "stored";
  }
  return outcome(stored[index]!);
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
