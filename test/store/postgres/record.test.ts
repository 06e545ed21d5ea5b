/**
 * The Postgres ingest write (src/store/postgres/record.ts) on a real Postgres: a delivery stored
 * once, duplicates by id and by content digest, a group's one multi-row insert telling each member
 * its own outcome, the fallback when a group fails, and `received_at` never behind the overview's
 * counted mark. Each test uses sources of its own: the database is shared with other files.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import type { NewDelivery, RecordOutcome } from "../../../src/store/new-delivery";
import { withClient, type Queryable } from "../../../src/store/postgres/client";
import { insertDeliveries, MAX_GROUP_SIZE, postgresWriter, recordDelivery, recordGrouped, type GroupWriter } from "../../../src/store/postgres/record";

const hyperdrive = env.HYPERDRIVE!;
const db = <T>(fn: (q: Queryable) => Promise<T>) => withClient(hyperdrive, fn);

const background: Promise<unknown>[] = [];
const ctx = { waitUntil: (promise: Promise<unknown>) => void background.push(promise) };
afterEach(async () => {
  await Promise.allSettled(background.splice(0));
});

/** A source name no other test uses. */
const freshSource = () => `pg-record-${crypto.randomUUID().slice(0, 8)}`;

function delivery(source: string, id: string, options: { digest?: number; body?: string } = {}): NewDelivery {
  return {
    source,
    id,
    eventType: "payment_intent.succeeded",
    body: new TextEncoder().encode(options.body ?? `{"id":"${id}"}`),
    receivedAtMs: Date.now(),
    contentDigest: options.digest === undefined ? null : new Uint8Array(32).fill(options.digest),
    headers: JSON.stringify([["content-type", "application/json"]]),
  };
}

/** The stored rows of `source`, by id. */
async function rows(source: string) {
  return db(async (q) => {
    const result = await q.query<{ id: string; body: Uint8Array; status: string; attempts: number; headers: unknown; received_at: string; updated_at: string }>(
      "SELECT id, body, status, attempts, headers, received_at, updated_at FROM deliveries WHERE source = $1 ORDER BY id",
      [source],
    );
    return result.rows;
  });
}

/** A writer over the real one that counts its round trips, and can be told to fail. */
function countedWriter(failures: { group?: boolean; groupLandsThenFails?: boolean } = {}) {
  const real = postgresWriter(hyperdrive);
  const calls = { one: [] as string[], group: [] as number[] };
  const writer: GroupWriter<NewDelivery> = {
    one(item) {
      calls.one.push(item.id);
      return real.one(item);
    },
    async group(items) {
      calls.group.push(items.length);
      if (failures.group) throw new Error("Connection terminated unexpectedly (injected)");
      const stored = await real.group(items);
      if (failures.groupLandsThenFails) throw new Error("Connection terminated unexpectedly (injected, after the insert)");
      return stored;
    },
  };
  return { writer, calls };
}

describe("recordDelivery", () => {
  it("stores a delivery once: its body byte for byte, its headers, status received", async () => {
    const source = freshSource();
    const body = '{"id":"evt_1","amount":100,"note":"€ ✓"}';
    expect(await recordDelivery(hyperdrive, ctx, delivery(source, "evt_1", { body }))).toBe("stored");
    const [row] = await rows(source);
    expect(new TextDecoder().decode(row!.body)).toBe(body);
    expect(row).toMatchObject({ id: "evt_1", status: "received", attempts: 0, headers: [["content-type", "application/json"]] });
    expect(row!.received_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
  });

  it("answers duplicate for the same (source, id), and keeps the first row", async () => {
    const source = freshSource();
    expect(await recordDelivery(hyperdrive, ctx, delivery(source, "evt_1", { body: "first" }))).toBe("stored");
    expect(await recordDelivery(hyperdrive, ctx, delivery(source, "evt_1", { body: "second" }))).toBe("duplicate");
    const stored = await rows(source);
    expect(stored.map((row) => new TextDecoder().decode(row.body))).toEqual(["first"]);
  });

  it("answers duplicate for the same content digest under another id, in the same source only", async () => {
    const source = freshSource();
    const other = freshSource();
    expect(await recordDelivery(hyperdrive, ctx, delivery(source, "a", { digest: 7 }))).toBe("stored");
    expect(await recordDelivery(hyperdrive, ctx, delivery(source, "b", { digest: 7 }))).toBe("duplicate");
    expect(await recordDelivery(hyperdrive, ctx, delivery(other, "b", { digest: 7 }))).toBe("stored");
    // Deliveries without a digest never conflict on it.
    expect(await recordDelivery(hyperdrive, ctx, delivery(source, "c"))).toBe("stored");
    expect(await recordDelivery(hyperdrive, ctx, delivery(source, "d"))).toBe("stored");
    expect((await rows(source)).map((row) => row.id)).toEqual(["a", "c", "d"]);
  });
});

describe("insertDeliveries (one group's statement)", () => {
  it("says for each row whether it was new: the first of two with the same id or digest is stored, the rest are duplicates", async () => {
    const source = freshSource();
    await insertDeliveriesAlone(delivery(source, "old"));
    const stored = await db((q) =>
      insertDeliveries(q, [
        delivery(source, "a", { body: "a first" }),
        delivery(source, "old"),
        delivery(source, "a", { body: "a second" }),
        delivery(source, "b", { digest: 1 }),
        delivery(source, "c", { digest: 1 }),
        delivery(source, "d"),
      ]),
    );
    expect(stored).toEqual([true, false, false, true, false, true]);
    const kept = await rows(source);
    expect(kept.map((row) => row.id)).toEqual(["a", "b", "d", "old"]);
    expect(new TextDecoder().decode(kept[0]!.body)).toBe("a first");
  });

  it("dates a row at the overview's counted mark when its receiver's clock is behind it", async () => {
    const source = freshSource();
    const mark = new Date(Date.now() + 3_600_000).toISOString();
    // In a transaction that is rolled back: the mark is shared with the other files' tests.
    const row = await db(async (q) => {
      await q.query("BEGIN");
      try {
        await q.query("INSERT INTO inbox_marks (name, value) VALUES ('counted_through', $1) ON CONFLICT (name) DO UPDATE SET value = excluded.value", [mark]);
        const late = delivery(source, "late");
        await insertDeliveries(q, [late]);
        const { rows } = await q.query<{ received_at: string; updated_at: string }>("SELECT received_at, updated_at FROM deliveries WHERE source = $1", [source]);
        return { ...rows[0]!, receivedAt: new Date(late.receivedAtMs).toISOString() };
      } finally {
        await q.query("ROLLBACK");
      }
    });
    expect(row.received_at).toBe(mark);
    expect(row.updated_at).toBe(row.receivedAt);
  });

  it("waits while the sweeper's walk holds the counted mark", async () => {
    const source = freshSource();
    await db((q) => q.query("INSERT INTO inbox_marks (name, value) VALUES ('counted_through', '') ON CONFLICT (name) DO NOTHING"));
    let walkMark = "";
    const received = await db(async (walk) => {
      await walk.query("BEGIN");
      try {
        const before = (await walk.query<{ value: string }>("SELECT value FROM inbox_marks WHERE name = 'counted_through' FOR UPDATE")).rows[0]!.value;
        // Past the mark as it is (another file's walks may have moved it on) and past the clock.
        walkMark = new Date(Math.max(Date.now(), before === "" ? 0 : Date.parse(before)) + 7_200_000).toISOString();
        await walk.query("UPDATE inbox_marks SET value = $1 WHERE name = 'counted_through'", [walkMark]);
        let landed = false;
        const insert = db((q) => insertDeliveries(q, [delivery(source, "during-walk")])).then((stored) => ((landed = true), stored));
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(landed).toBe(false);
        // Rolled back, not committed: the mark is shared. The insert then reads the mark as it was.
        await walk.query("ROLLBACK");
        expect(await insert).toEqual([true]);
        return { before, row: (await rows(source))[0]! };
      } catch (error) {
        await walk.query("ROLLBACK").catch(() => {});
        throw error;
      }
    });
    expect(received.row.received_at < walkMark).toBe(true);
    expect(received.row.received_at >= received.before).toBe(true);
  });
});

describe("group commit", () => {
  it("writes a delivery alone, at once, when nothing is in flight", async () => {
    const source = freshSource();
    const { writer, calls } = countedWriter();
    const binding = {};
    const outcomes: RecordOutcome[] = [];
    for (const id of ["q1", "q2", "q1"]) outcomes.push(await recordGrouped(binding, ctx, delivery(source, id), writer));
    expect(outcomes).toEqual(["stored", "stored", "duplicate"]);
    expect(calls).toEqual({ one: ["q1", "q2", "q1"], group: [] });
  });

  it("writes what arrives during a write as one statement, and each request learns its own outcome", async () => {
    const source = freshSource();
    const { writer, calls } = countedWriter();
    const ids = [...Array.from({ length: 30 }, (_, n) => `c${n}`), ...Array.from({ length: 10 }, (_, n) => `c${n}`)];
    const binding = {};
    const outcomes = await Promise.all(ids.map((id) => recordGrouped(binding, ctx, delivery(source, id), writer)));

    // The first goes alone; the 39 that came while it was in flight share one insert, copies included.
    expect(calls.one).toEqual(["c0"]);
    expect(calls.group).toEqual([39]);
    expect(outcomes.slice(0, 30)).toEqual(Array(30).fill("stored"));
    expect(outcomes.slice(30)).toEqual(Array(10).fill("duplicate"));
    expect((await rows(source)).length).toBe(30);
  });

  it("closes a group at MAX_GROUP_SIZE and opens the next", async () => {
    const source = freshSource();
    const { writer, calls } = countedWriter();
    const binding = {};
    const outcomes = await Promise.all(Array.from({ length: MAX_GROUP_SIZE + 6 }, (_, n) => recordGrouped(binding, ctx, delivery(source, `m${n}`), writer)));
    expect(calls.group).toEqual([MAX_GROUP_SIZE, 5]);
    expect(outcomes.every((outcome) => outcome === "stored")).toBe(true);
    expect((await rows(source)).length).toBe(MAX_GROUP_SIZE + 6);
  });

  it("writes each member alone when its group fails, so the outcome is each one's own", async () => {
    const source = freshSource();
    await insertDeliveriesAlone(delivery(source, "f2"));
    const { writer, calls } = countedWriter({ group: true });
    const binding = {};
    const outcomes = await Promise.all(["f0", "f1", "f2", "f3"].map((id) => recordGrouped(binding, ctx, delivery(source, id), writer)));
    expect(calls.group).toEqual([3]);
    expect([...calls.one].sort()).toEqual(["f0", "f1", "f2", "f3"]);
    // f2 was there before: alone after a failed group it counts as stored (the group may have landed).
    expect(outcomes).toEqual(["stored", "stored", "stored", "stored"]);
    expect((await rows(source)).map((row) => row.id)).toEqual(["f0", "f1", "f2", "f3"]);
  });

  it("counts a group that landed before its connection failed as stored, once", async () => {
    const source = freshSource();
    const { writer } = countedWriter({ groupLandsThenFails: true });
    const binding = {};
    const outcomes = await Promise.all(["l0", "l1", "l2"].map((id) => recordGrouped(binding, ctx, delivery(source, id), writer)));
    expect(outcomes).toEqual(["stored", "stored", "stored"]);
    expect((await rows(source)).map((row) => row.id)).toEqual(["l0", "l1", "l2"]);
  });

  it("fails a member whose own write fails, and stores the others", async () => {
    const source = freshSource();
    const binding = {};
    const { writer } = countedWriter({ group: true });
    // A NUL is refused in Postgres text: this delivery's own insert fails.
    const bad = delivery(source, "bad\u0000id");
    const results = await Promise.allSettled([delivery(source, "g0"), delivery(source, "g1"), bad].map((item) => recordGrouped(binding, ctx, item, writer)));
    expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "rejected"]);
    expect((await rows(source)).map((row) => row.id)).toEqual(["g0", "g1"]);
  });
});

async function insertDeliveriesAlone(item: NewDelivery): Promise<void> {
  expect(await db((q) => insertDeliveries(q, [item]))).toEqual([true]);
}
