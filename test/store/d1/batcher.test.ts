// The consumer's statement batcher against the real local D1: neighbours share a round trip, a job
// at fault fails alone, a batch that lands and reports an error is not taken for a failure.
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { createBatcher } from "../../../src/store/d1/batcher";
import { faultyD1 } from "../../helpers/faults";

beforeAll(async () => {
  await env.DB.prepare("CREATE TABLE IF NOT EXISTS batcher_rows (key TEXT PRIMARY KEY, n INTEGER)").run();
});

const insert = (db: D1Database, key: string) => db.prepare("INSERT INTO batcher_rows (key, n) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET n = n + 1").bind(key);
const countOf = async (key: string) => (await env.DB.prepare("SELECT n FROM batcher_rows WHERE key = ?").bind(key).first<{ n: number }>())?.n ?? 0;

describe("the statement batcher", () => {
  it("sends what is submitted together as one D1 batch, each job getting its own results", async () => {
    const counted = faultyD1(env.DB, () => undefined);
    const batcher = createBatcher(counted.db);
    const results = await Promise.all(["t1", "t2", "t3"].map((key) => batcher.run([insert(counted.db, `together-${key}`), counted.db.prepare("SELECT ? AS key").bind(key)])));
    expect(counted.calls.map((call) => call.method)).toEqual(["batch"]);
    expect(counted.calls[0]!.sql).toHaveLength(6);
    expect(results.map((each) => each[1]!.results[0])).toEqual([{ key: "t1" }, { key: "t2" }, { key: "t3" }]);
  });

  it("runs each job alone when the shared batch fails, so only the job at fault sees an error", async () => {
    await env.DB.prepare("CREATE TABLE IF NOT EXISTS batcher_strict (key TEXT PRIMARY KEY)").run();
    await env.DB.prepare("INSERT OR IGNORE INTO batcher_strict (key) VALUES ('taken')").run();
    const batcher = createBatcher(env.DB);
    const clash = env.DB.prepare("INSERT INTO batcher_strict (key) VALUES ('taken')");
    const outcomes = await Promise.allSettled([
      batcher.run([insert(env.DB, "alone-ok-1")]),
      batcher.run([clash]),
      batcher.run([insert(env.DB, "alone-ok-2")]),
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toMatch(/UNIQUE constraint failed/);
    expect([await countOf("alone-ok-1"), await countOf("alone-ok-2")]).toEqual([1, 1]);
  });

  it("tries a lone job once more when its batch reports an error: a batch that landed is run again, not failed", async () => {
    let lost = 0;
    const lostAck = faultyD1(env.DB, (call) => (call.method === "batch" && lost++ === 0 ? "commit-then-throw" : undefined));
    const batcher = createBatcher(lostAck.db);
    await batcher.run([insert(lostAck.db, "landed-once")]);
    expect(lostAck.faulted).toHaveLength(1);
    // It landed, then ran again: the caller's statements must be safe to run twice (this one counts).
    expect(await countOf("landed-once")).toBe(2);
  });

  it("sends what comes while a batch is in flight in the next one", async () => {
    const stalled = faultyD1(env.DB, (call) => (call.n === 1 ? "hang" : undefined));
    const batcher = createBatcher(stalled.db);
    const first = batcher.run([insert(stalled.db, "flight-0")]);
    await expect.poll(() => stalled.faulted.length).toBe(1);
    const later = ["flight-1", "flight-2", "flight-3"].map((key) => batcher.run([insert(stalled.db, key)]));
    stalled.release();
    await Promise.all([first, ...later]);
    expect(stalled.calls.map((call) => call.sql.length)).toEqual([1, 3]);
  });
});
