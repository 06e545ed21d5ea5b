/**
 * D1's shared commits under faults: D1 commits the done marks of a queue batch's deliveries in one
 * batch (store/d1/batcher.ts), which Postgres never shares (a transaction per delivery), so only D1
 * can lose the answer of a commit that carried several deliveries. The faults that both stores
 * meet: test/processing/faults.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { defineHandlers, type Handler } from "../../../src/handler-api";
import { sql } from "../../../src/sql";
import { faultyD1 } from "../../helpers/faults";
import { consume, createEffectTables, storeDelivery } from "../../helpers/processing";
import { count, deliveryRow } from "../../helpers/store-db";

beforeAll(createEffectTables);

/** Commits one keyed effect with the done mark. */
const keyed: Handler = (_event, ctx) => [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'ok')`];

describe("a shared commit", () => {
  it("that D1 reported as failed is taken for the success it was, for each of its deliveries", async () => {
    const refs = ["a", "b", "c", "d"].map((id) => ({ source: "lostack-shared", id }));
    for (const ref of refs) await storeDelivery(ref);
    const lostAck = faultyD1(env.DB, (call) =>
      call.method === "batch" && call.sql.filter((text) => text.includes("SET status = 'done'")).length > 1 ? "commit-then-throw" : undefined,
    );
    const { outcomes } = await consume(refs, defineHandlers({ "lostack-shared": { "*": keyed } }), { DB: lostAck.db });
    expect(lostAck.faulted.length).toBeGreaterThan(0);
    expect(outcomes.map((outcome) => outcome.reason)).toEqual(["done", "done", "done", "done"]);
    for (const ref of refs) expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });
});

describe("a D1 call that never answers", () => {
  it("is given up on after STORE_TIMEOUT_SECONDS: the delivery is retried, not stalled, and done once when D1 answers again", { timeout: 30_000 }, async () => {
    const ref = { source: "d1hangs", id: "commit-never-answers" };
    await storeDelivery(ref);
    const hung = faultyD1(env.DB, (call) => (call.method === "batch" && call.sql.some((text) => text.includes("SET status = 'done'")) ? "hang" : undefined));
    const handlers = defineHandlers({ d1hangs: { "*": keyed } });
    try {
      const { outcomes } = await consume([ref], handlers, { DB: hung.db, STORE_TIMEOUT_SECONDS: "1" } as Partial<Env>);
      expect(hung.faulted.length).toBeGreaterThan(0);
      expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
      const row = await deliveryRow(ref.source, ref.id);
      expect(row).toMatchObject({ status: "received", attempts: 0 });
      expect(row!.attempt_log).toContain("StoreTimeoutError: D1 did not answer a batch within 1 s");
    } finally {
      hung.release();
    }
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });
});
