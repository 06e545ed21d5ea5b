/**
 * D1's shared commits under faults: D1 commits the done marks of a queue batch's deliveries in one
 * batch (store/d1/batcher.ts), which Postgres never shares (a transaction per delivery), so only D1
 * can lose the answer of a commit that carried several deliveries. The faults that both stores
 * meet: faults.test.ts.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { defineHandlers, type Handler } from "../../src/processing/handlers";
import { sql } from "../../src/sql";
import { faultyD1 } from "../helpers/faults";
import { consume, createEffectTables, storeDelivery } from "../helpers/processing";
import { count } from "../helpers/store-db";

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
