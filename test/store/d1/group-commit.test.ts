// Group commit of the ingest insert, against the real local D1: what each request learns, how
// many round trips the database sees, and what happens when a batch fails.
import { env } from "cloudflare:workers";
import { afterEach, expect, it } from "vitest";
import { MAX_GROUP_BYTES, MAX_GROUP_SIZE, recordDeliveryGrouped } from "../../../src/store/d1/group-commit";
import type { NewDelivery, RecordOutcome } from "../../../src/store/new-delivery";
import { deliveryRows } from "../../helpers/db";

type Statement = D1PreparedStatement & { readonly real: D1PreparedStatement; readonly id: string };

/** The real DB binding, with its round trips counted and failures injectable. */
function countedDb(failures: { batch?: boolean; batchLandsThenFails?: boolean; runFor?: string } = {}) {
  const calls = { runs: [] as string[], batches: [] as number[] };
  const db = {
    prepare(sql: string) {
      const prepared = env.DB.prepare(sql);
      return {
        bind(...values: unknown[]) {
          const real = prepared.bind(...values);
          const id = String(values[1]);
          return {
            real,
            id,
            run() {
              calls.runs.push(id);
              if (failures.runFor === id) return Promise.reject(new Error("D1_ERROR: injected"));
              return real.run();
            },
          };
        },
      };
    },
    batch(statements: Statement[]) {
      calls.batches.push(statements.length);
      if (failures.batch) return Promise.reject(new Error("D1_ERROR: injected batch failure"));
      const written = env.DB.batch(statements.map((statement) => statement.real));
      if (failures.batchLandsThenFails) return written.then(() => Promise.reject(new Error("D1_ERROR: Network connection lost (injected)")));
      return written;
    },
  } as unknown as D1Database;
  return { db, calls };
}

const background: Promise<unknown>[] = [];
const ctx = { waitUntil: (promise: Promise<unknown>) => void background.push(promise) };
afterEach(async () => {
  await Promise.allSettled(background.splice(0));
});

let sequence = 0;
function delivery(id: string, bytes = 16): NewDelivery {
  return { source: "stripe", id, eventType: "payment_intent.succeeded", body: new Uint8Array(bytes).fill(120), receivedAtMs: Date.now() + sequence++ };
}

/** Ids stored with `prefix` (the rows of earlier tests in this file stay). */
async function storedIds(prefix: string): Promise<string[]> {
  return (await deliveryRows("stripe")).map((row) => row.id).filter((id) => id.startsWith(prefix)).sort();
}

it("writes a delivery alone, at once, when nothing is in flight", async () => {
  const { db, calls } = countedDb();
  const outcomes: RecordOutcome[] = [];
  for (const id of ["q1", "q2", "q1"]) outcomes.push(await recordDeliveryGrouped(db, ctx, delivery(id)));
  expect(outcomes).toEqual(["stored", "stored", "duplicate"]);
  expect(calls).toEqual({ runs: ["q1", "q2", "q1"], batches: [] });
});

it("writes what arrives during a write as one batch, and each request learns its own outcome", async () => {
  const { db, calls } = countedDb();
  const ids = [...Array.from({ length: 30 }, (_, n) => `c${n}`), ...Array.from({ length: 10 }, (_, n) => `c${n}`)];
  const outcomes = await Promise.all(ids.map((id) => recordDeliveryGrouped(db, ctx, delivery(id))));

  // The first goes alone; the 39 that came while it was in flight share one batch, copies included.
  expect(calls.runs).toEqual(["c0"]);
  expect(calls.batches).toEqual([39]);
  expect(outcomes.slice(0, 30)).toEqual(Array(30).fill("stored"));
  expect(outcomes.slice(30)).toEqual(Array(10).fill("duplicate"));
  expect(await storedIds("c")).toEqual(Array.from({ length: 30 }, (_, n) => `c${n}`).sort());
});

it(`caps a batch at ${MAX_GROUP_SIZE} deliveries; the next group waits for it`, async () => {
  const { db, calls } = countedDb();
  const ids = Array.from({ length: 1 + MAX_GROUP_SIZE + 50 }, (_, n) => `s${n}`);
  const outcomes = await Promise.all(ids.map((id) => recordDeliveryGrouped(db, ctx, delivery(id))));
  expect(calls.runs).toEqual(["s0"]);
  expect(calls.batches).toEqual([MAX_GROUP_SIZE, 50]);
  expect(new Set(outcomes)).toEqual(new Set(["stored"]));
  expect((await storedIds("s")).length).toBe(ids.length);
});

it("writes a delivery larger than a group's byte budget alone", async () => {
  const { db, calls } = countedDb();
  const outcomes = await Promise.all([
    recordDeliveryGrouped(db, ctx, delivery("b0")),
    recordDeliveryGrouped(db, ctx, delivery("big", MAX_GROUP_BYTES + 1)),
    recordDeliveryGrouped(db, ctx, delivery("b1")),
  ]);
  expect(outcomes).toEqual(["stored", "stored", "stored"]);
  expect(calls).toEqual({ runs: ["b0", "big"], batches: [1] });
});

it("counts a second delivery with the same content digest as a duplicate, in one batch, whatever its id", async () => {
  const { db, calls } = countedDb();
  const digest = (text: string) => new TextEncoder().encode(text.padEnd(32, "."));
  const same = digest(crypto.randomUUID());
  const outcomes = await Promise.all([
    recordDeliveryGrouped(db, ctx, { ...delivery("d0"), contentDigest: digest(crypto.randomUUID()) }),
    recordDeliveryGrouped(db, ctx, { ...delivery("d1"), contentDigest: same }),
    recordDeliveryGrouped(db, ctx, { ...delivery("d2"), contentDigest: same }),
    recordDeliveryGrouped(db, ctx, { ...delivery("d3"), contentDigest: null }),
    recordDeliveryGrouped(db, ctx, { ...delivery("d4"), contentDigest: null }),
  ]);
  expect(calls.batches).toEqual([4]);
  expect(outcomes).toEqual(["stored", "stored", "duplicate", "stored", "stored"]);
  expect(await storedIds("d")).toEqual(["d0", "d1", "d3", "d4"]);
});

it("when a batch fails, each member writes its own row, so nothing is reported stored that is not", async () => {
  const { db, calls } = countedDb({ batch: true, runFor: "f3" });
  const ids = ["f0", "f1", "f2", "f3", "f4"];
  const results = await Promise.allSettled(ids.map((id) => recordDeliveryGrouped(db, ctx, delivery(id))));

  expect(calls.batches).toEqual([4]);
  expect(calls.runs.sort()).toEqual(["f0", "f1", "f2", "f3", "f4"]);
  expect(results.map((result) => result.status)).toEqual(["fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect(await storedIds("f")).toEqual(["f0", "f1", "f2", "f4"]);
});

it("when a batch lands but reports an error, its members are still reported stored (which is what the receiver enqueues), once", async () => {
  const { db, calls } = countedDb({ batchLandsThenFails: true });
  const ids = ["l0", "l1", "l2", "l3"];
  const outcomes = await Promise.all(ids.map((id) => recordDeliveryGrouped(db, ctx, delivery(id))));
  expect(calls.batches).toEqual([3]);
  // Each member's own insert then finds its row: the batch's, which only this request knows of.
  expect(outcomes).toEqual(["stored", "stored", "stored", "stored"]);
  expect(await storedIds("l")).toEqual(ids);
});
