/**
 * Every Postgres call is bounded (STORE_TIMEOUT_SECONDS, the client's query timeout: store/timeout.ts),
 * on a real server: a `LOCK deliveries` held in another session (an operator in psql, a migration)
 * used to stall a delivery for as long as it was held, its lease renewed through the hung call. Now
 * the call fails after the timeout as an infrastructure error, counting nothing, and the delivery
 * goes through once the lock is gone.
 */
import { env } from "cloudflare:workers";
import { Client } from "pg";
import { describe, expect, it } from "vitest";
import { defineHandlers } from "../../../src/handler-api";
import { sql } from "../../../src/sql";
import { consume, createEffectTables, storeDelivery } from "../../helpers/processing";
import { count, deliveryRow } from "../../helpers/store-db";

describe("a Postgres call stuck behind a lock held elsewhere", () => {
  it("fails after STORE_TIMEOUT_SECONDS as an infrastructure error, and the delivery is done once the lock is released", { timeout: 30_000 }, async () => {
    await createEffectTables();
    const ref = { source: `pg-locked-${crypto.randomUUID().slice(0, 8)}`, id: "evt_locked" };
    await storeDelivery(ref);
    const handlers = defineHandlers({ [ref.source]: { "*": (_event, ctx) => [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'ok')`] } });
    const operator = new Client({ connectionString: env.HYPERDRIVE!.connectionString });
    operator.on("error", () => {});
    await operator.connect();
    try {
      await operator.query("BEGIN");
      await operator.query("LOCK TABLE deliveries IN ACCESS EXCLUSIVE MODE");
      const { outcomes } = await consume([ref], handlers, { STORE_TIMEOUT_SECONDS: "1" } as Partial<Env>);
      expect(outcomes[0]).toMatchObject({ action: "retry", reason: "infrastructure" });
    } finally {
      await operator.query("ROLLBACK").catch(() => undefined);
      await operator.end().catch(() => undefined);
    }
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "received", attempts: 0 });
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect(await count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${ref.id}`)).toBe(1);
  });
});
