/**
 * Property: random interleavings of deliveries (claims), lease expiries (alarms), handler results
 * (commits and failures, arriving in any order, late ones included) and replays, all on one
 * delivery, never commit its effect twice, and always end settled once the workers finish.
 * Drives the real consumer, lease object and store (D1 or Postgres); fast-check picks the schedule.
 */
import { env } from "cloudflare:workers";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { PermanentError } from "../../src/handler-api";
import { defineHandlers } from "../../src/handler-api";
import { sql } from "../../src/sql";
import { consume, createEffectTables, expireLease, leaseFor, storeDelivery } from "../helpers/processing";
import { count, deliveryRow } from "../helpers/store-db";

beforeAll(createEffectTables);

type Result = "ok" | "transient" | "permanent";
type Step = { kind: "deliver" } | { kind: "finish"; worker: number; result: Result } | { kind: "expire" } | { kind: "replay" };

const step: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant({ kind: "deliver" as const }), weight: 3 },
  { arbitrary: fc.record({ kind: fc.constant("finish" as const), worker: fc.nat(5), result: fc.constantFrom<Result>("ok", "ok", "transient", "permanent") }), weight: 3 },
  { arbitrary: fc.constant({ kind: "expire" as const }), weight: 2 },
  { arbitrary: fc.constant({ kind: "replay" as const }), weight: 1 },
);

/** A worker whose handler waits for the test to say how its run ends. */
interface Worker {
  readonly done: Promise<unknown>;
  readonly entered: Promise<void>;
  finish(result: Result): void;
}

let runCounter = 0;

describe("one delivery under any interleaving", () => {
  it("commits its effect at most once, and ends settled (done once, or failed)", async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), async (steps) => {
        const ref = { source: "interleaved", id: `run-${++runCounter}` };
        await storeDelivery(ref);
        const waiting: Worker[] = [];
        const effects = () => count(sql`SELECT COUNT(*) AS n FROM unkeyed_effects WHERE delivery_id = ${ref.id}`);

        const startWorker = async (): Promise<void> => {
          let entered!: () => void;
          let finish!: (result: Result) => void;
          const enteredPromise = new Promise<void>((resolve) => (entered = resolve));
          const result = new Promise<Result>((resolve) => (finish = resolve));
          const handlers = defineHandlers({
            interleaved: {
              "*": async (_event, ctx) => {
                entered();
                const how = await result;
                if (how === "transient") throw new Error("transient failure");
                if (how === "permanent") throw new PermanentError("permanent failure");
                // Written only by the commit that marks the delivery done: counts commits.
                return [ctx.sql`INSERT INTO unkeyed_effects (delivery_id, note) VALUES (${ctx.deliveryId}, 'commit')`];
              },
            },
          });
          const done = consume([ref], handlers);
          // Either it reached the handler (and waits there), or it finished at once (busy, settled…).
          const reached = await Promise.race([enteredPromise.then(() => true), done.then(() => false)]);
          if (reached) waiting.push({ done, entered: enteredPromise, finish });
        };

        for (const next of steps) {
          if (next.kind === "deliver") await startWorker();
          else if (next.kind === "expire") await expireLease(leaseFor(env, ref));
          else if (next.kind === "replay") await replay(ref);
          else if (waiting.length > 0) {
            const [worker] = waiting.splice(next.worker % waiting.length, 1);
            worker!.finish(next.result);
            await worker!.done;
          }
          expect(await effects()).toBeLessThanOrEqual(1);
        }

        // The rest of the workers finish (late ones included), then the platform carries on: alarms
        // fire and messages are redelivered until the delivery is settled.
        for (const worker of waiting.splice(0)) {
          worker.finish("ok");
          await worker.done;
        }
        for (let round = 0; round < 12; round++) {
          const status = (await deliveryRow(ref.source, ref.id))!.status;
          if (status === "done" || status === "failed") break;
          await expireLease(leaseFor(env, ref));
          await startWorker();
          for (const worker of waiting.splice(0)) {
            worker.finish("ok");
            await worker.done;
          }
        }
        const row = (await deliveryRow(ref.source, ref.id))!;
        expect(["done", "failed"]).toContain(row.status);
        expect(await effects()).toBe(row.status === "done" ? 1 : 0);
      }),
      { numRuns: 40 },
    );
    // 40 runs of up to 14 steps through a real store and lease objects: about 2 s alone on D1, about
    // 35 s on Postgres (a connection per store operation), more on a loaded machine. A limit for the
    // runner, not a time the test asserts.
  }, 180_000);
});

/** The admin API's replay of a failed delivery (a 409 for any other state is fine here). */
async function replay(ref: { source: string; id: string }): Promise<void> {
  const { exports } = await import("cloudflare:workers");
  const response = await (exports as unknown as { default: { fetch(request: Request): Promise<Response> } }).default.fetch(
    new Request(`https://inbox.test/admin/deliveries/${ref.source}/${ref.id}/replay`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
    }),
  );
  await response.arrayBuffer();
}
