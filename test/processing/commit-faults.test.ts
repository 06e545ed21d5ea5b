/**
 * The done commit when the delivery or its effects are at fault, on both stores: a row deleted
 * under its worker commits none of the handler's effects; a commit that keeps failing the same way
 * while the database answers (an effect that always deadlocks, or always runs past the statement
 * timeout) ends the delivery `failed` after COMMIT_FAILURE_LIMIT runs, while an outage (the
 * database answering nothing) still fails nothing (faults.test.ts, "a long database brownout").
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { COMMIT_FAILURE_LIMIT } from "../../src/processing/consumer";
import { defineHandlers, type Handler } from "../../src/handler-api";
import { sql } from "../../src/sql";
import { consume, createEffectTables, gate, leaseFor, recordingQueue, storeDelivery } from "../helpers/processing";
import { count, deliveryRow, exec, storeName } from "../helpers/store-db";
import { faultyStore, pgError } from "../helpers/store-faults";

beforeAll(createEffectTables);

const keyed: Handler = (_event, ctx) => [ctx.sql`INSERT INTO keyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'ok')`];
const effectsOf = (id: string) => count(sql`SELECT COUNT(*) AS n FROM keyed_effects WHERE delivery_id = ${id}`);

describe("a delivery whose row is deleted while its handler runs", () => {
  it("commits none of the handler's effects: the effects and the done mark land together or not at all", async () => {
    const ref = { source: "rowgone", id: "deleted-under-worker" };
    await storeDelivery(ref);
    const running = gate();
    const proceed = gate();
    const handlers = defineHandlers({
      rowgone: {
        "*": async (event, ctx) => {
          running.open();
          await proceed.promise;
          return keyed(event, ctx) as never;
        },
      },
    });
    const run = consume([ref], handlers);
    await running.promise;
    // Deleted by hand (a cleanup script, `wrangler d1 execute`) while the handler works.
    await exec(sql`DELETE FROM deliveries WHERE source = ${ref.source} AND id = ${ref.id}`);
    proceed.open();
    const { outcomes } = await run;
    expect(outcomes[0]).toMatchObject({ action: "ack", reason: "lease_lost" });
    expect(await effectsOf(ref.id)).toBe(0);
    expect(await deliveryRow(ref.source, ref.id)).toBeNull();
  });
});

describe("a commit that keeps failing the same way while the database answers", () => {
  it(`fails the delivery after ${COMMIT_FAILURE_LIMIT} such runs, with the database's reason, and dead-letters it; each run before counts nothing`, { timeout: 60_000 }, async () => {
    const ref = { source: "alwaystimesout", id: "heavy-effect" };
    await storeDelivery(ref);
    // The database's own error for an effect that always runs past its statement limit.
    const timedOut = storeName === "d1" ? new Error("D1_ERROR: the query took too long and was interrupted: SQLITE_INTERRUPT") : pgError("57014", "canceling statement due to statement timeout");
    const commits = faultyStore((call) => (call.sql.some((text) => text.includes("SET status = 'done'")) ? timedOut : undefined));
    const deadLetters = recordingQueue(env.DEAD_LETTERS);
    const handlers = defineHandlers({ alwaystimesout: { "*": keyed } });
    for (let run = 1; run < COMMIT_FAILURE_LIMIT; run++) {
      const { outcomes } = await consume([ref], handlers, { ...commits.bindings, DEAD_LETTERS: deadLetters.producer }, { attempts: run });
      expect(outcomes[0], `run ${run}`).toMatchObject({ action: "retry", reason: "infrastructure" });
      expect(await deliveryRow(ref.source, ref.id), `run ${run}`).toMatchObject({ status: "received", attempts: 0 });
    }
    const last = await consume([ref], handlers, { ...commits.bindings, DEAD_LETTERS: deadLetters.producer }, { attempts: COMMIT_FAILURE_LIMIT });
    expect(last.outcomes[0]).toMatchObject({ action: "ack", reason: "failed" });
    const row = await deliveryRow(ref.source, ref.id);
    expect(row).toMatchObject({ status: "failed", attempts: 1 });
    expect(row!.error).toContain(storeName === "d1" ? "SQLITE_INTERRUPT" : "canceling statement due to statement timeout");
    expect(row!.error).toContain(`gave up after ${COMMIT_FAILURE_LIMIT} runs`);
    expect(deadLetters.sent).toEqual([expect.objectContaining({ ...ref, error: row!.error })]);
    expect(await effectsOf(ref.id)).toBe(0);
    // Settled: its lease object keeps nothing.
    expect(await leaseFor(env, ref).claim(ref)).toMatchObject({ kind: "settled" });
  });

  it("starts counting again after a run whose commit failed otherwise: only failures in a row of one kind add up", { timeout: 60_000 }, async () => {
    const ref = { source: "alwaystimesout", id: "varying" };
    await storeDelivery(ref);
    let n = 0;
    const errors = storeName === "d1" ? ["D1_ERROR: SQLITE_INTERRUPT", "D1_ERROR: SQLITE_IOERR"] : ["57014", "40P01"];
    const varying = faultyStore((call) => {
      if (!call.sql.some((text) => text.includes("SET status = 'done'"))) return undefined;
      const which = errors[Math.floor(n++ / (COMMIT_FAILURE_LIMIT - 1)) % 2]!;
      return storeName === "d1" ? new Error(which) : pgError(which, `sqlstate ${which}`);
    });
    const handlers = defineHandlers({ alwaystimesout: { "*": keyed } });
    // Twice COMMIT_FAILURE_LIMIT − 1 failures, in two runs of one kind each: none gives up.
    for (let run = 1; run <= 2 * (COMMIT_FAILURE_LIMIT - 1); run++) {
      expect((await consume([ref], handlers, varying.bindings)).outcomes[0], `run ${run}`).toMatchObject({ action: "retry", reason: "infrastructure" });
    }
    expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect(await effectsOf(ref.id)).toBe(1);
  });
});
