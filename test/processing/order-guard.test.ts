import { beforeAll, describe, expect, it } from "vitest";
import { defineHandlers, type Handler } from "../../src/handler-api";
import { sql } from "../../src/sql";
import { consume, gate, storeDelivery } from "../helpers/processing";
import { deliveryRow, exec, firstRow } from "../helpers/store-db";
import { faultyStore } from "../helpers/store-faults";

beforeAll(async () => {
  await exec(sql`CREATE TABLE IF NOT EXISTS customers (id TEXT PRIMARY KEY, email TEXT NOT NULL)`);
});

interface CustomerUpdated {
  customer: string;
  email: string;
  version: number;
}

/** Overwrites the customer's email, guarded by the event's version. */
const updateCustomer: Handler<CustomerUpdated> = async (event, ctx) => {
  if (!(await ctx.order.isNewer(`customer:${event.customer}`, event.version))) return;
  ctx.effect(ctx.sql`INSERT INTO customers (id, email) VALUES (${event.customer}, ${event.email}) ON CONFLICT (id) DO UPDATE SET email = excluded.email`);
};

const handlers = defineHandlers({ crm: { "customer.updated": updateCustomer } });

async function email(customer: string): Promise<string | undefined> {
  return (await firstRow<{ email: string }>(sql`SELECT email FROM customers WHERE id = ${customer}`))?.email;
}

describe("the out-of-order guard", () => {
  it("applies a newer event and skips an older one that arrives after it, still marking it done", async () => {
    await storeDelivery({ source: "crm", id: "v2" }, { customer: "c1", email: "new@example.com", version: 2 }, "customer.updated");
    await storeDelivery({ source: "crm", id: "v1" }, { customer: "c1", email: "old@example.com", version: 1 }, "customer.updated");
    await consume([{ source: "crm", id: "v2" }], handlers);
    await consume([{ source: "crm", id: "v1" }], handlers);
    expect(await email("c1")).toBe("new@example.com");
    expect((await deliveryRow("crm", "v1"))!.status).toBe("done");
    const applied = await firstRow(sql`SELECT version, delivery_id FROM entity_versions WHERE entity = 'customer:c1'`);
    expect(applied).toEqual({ version: 2, delivery_id: "v2" });
  });

  it("rolls back an older event whose check raced a newer commit, and its retry then skips it", async () => {
    await storeDelivery({ source: "crm", id: "race-old" }, { customer: "c2", email: "old@example.com", version: 10 }, "customer.updated");
    await storeDelivery({ source: "crm", id: "race-new" }, { customer: "c2", email: "new@example.com", version: 11 }, "customer.updated");
    const checked = gate();
    const proceed = gate();
    const slowOld = defineHandlers({
      crm: {
        "customer.updated": async (event: CustomerUpdated, ctx) => {
          await updateCustomer(event, ctx);
          checked.open();
          await proceed.promise; // the newer event commits while this one waits
        },
      },
    });
    const oldRun = consume([{ source: "crm", id: "race-old" }], slowOld);
    await checked.promise;
    await consume([{ source: "crm", id: "race-new" }], handlers);
    proceed.open();
    const { outcomes } = await oldRun;
    expect(outcomes[0]).toMatchObject({ action: "retry", reason: "handler_error" });
    expect(await email("c2")).toBe("new@example.com");
    expect((await deliveryRow("crm", "race-old"))!.error).toMatch(/newer event/);

    await consume([{ source: "crm", id: "race-old" }], handlers);
    expect(await email("c2")).toBe("new@example.com");
    expect(await deliveryRow("crm", "race-old")).toMatchObject({ status: "done", attempts: 2 });
  });

  it("gives one decision per entity and version in a run: asking twice adds one bump, and the delivery is done", async () => {
    const ref = { source: "crm", id: "asks-twice" };
    await storeDelivery(ref, { customer: "c3", email: "twice@example.com", version: 5 }, "customer.updated");
    const answers: boolean[] = [];
    const asksTwice = defineHandlers({
      crm: {
        "customer.updated": async (event: CustomerUpdated, ctx) => {
          // Two helpers of one handler each guard the same entity.
          answers.push(await ctx.order.isNewer(`customer:${event.customer}`, event.version));
          await updateCustomer(event, ctx);
          answers.push(await ctx.order.isNewer(`customer:${event.customer}`, event.version));
        },
      },
    });
    const { outcomes } = await consume([ref], asksTwice);
    expect(outcomes[0]!.reason).toBe("done");
    expect(answers).toEqual([true, true]);
    expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 1 });
    expect(await email("c3")).toBe("twice@example.com");
    expect(await firstRow(sql`SELECT version, delivery_id FROM entity_versions WHERE entity = 'customer:c3'`)).toEqual({ version: 5, delivery_id: ref.id });
  });

  it("counts a version queued earlier in the run as applied: a newer one is still newer, an older one is not", async () => {
    const ref = { source: "crm", id: "asks-for-three" };
    await storeDelivery(ref, { customer: "c4", email: "three@example.com", version: 1 }, "customer.updated");
    const answers: boolean[] = [];
    const threeVersions = defineHandlers({
      crm: {
        "customer.updated": async (event: CustomerUpdated, ctx) => {
          for (const version of [5, 7, 6]) answers.push(await ctx.order.isNewer(`customer:${event.customer}`, version));
        },
      },
    });
    expect((await consume([ref], threeVersions)).outcomes[0]!.reason).toBe("done");
    expect(answers).toEqual([true, true, false]);
    expect(await firstRow(sql`SELECT version FROM entity_versions WHERE entity = 'customer:c4'`)).toEqual({ version: 7 });
  });

  it("counts a failed read of the guard as the database's fault, not the handler's: no attempt used, even the last, even if the handler rethrows it", async () => {
    for (const rethrow of [false, true]) {
      const ref = { source: "crm", id: `guard-read-fails-${rethrow}` };
      await storeDelivery(ref, { customer: `c5-${rethrow}`, email: "read@example.com", version: 3 }, "customer.updated");
      await exec(sql`UPDATE deliveries SET attempts = 4, error = 'earlier failure' WHERE id = ${ref.id}`);
      const readFails = faultyStore((call) => (call.sql.some((text) => text.includes("SELECT version FROM entity_versions")) ? "throw" : undefined));
      const wrapping = defineHandlers({
        crm: {
          "customer.updated": async (event: CustomerUpdated, ctx) => {
            try {
              await updateCustomer(event, ctx);
            } catch (error) {
              if (rethrow) throw new Error(`could not check the order: ${String(error)}`);
              throw error;
            }
          },
        },
      });
      const { outcomes } = await consume([ref], wrapping, readFails.bindings);
      expect(readFails.faulted.length, String(rethrow)).toBeGreaterThan(0);
      expect(outcomes[0], String(rethrow)).toMatchObject({ action: "retry", reason: "infrastructure" });
      expect(await deliveryRow(ref.source, ref.id), String(rethrow)).toMatchObject({ status: "received", attempts: 4, error: "earlier failure" });
      expect((await consume([ref], handlers)).outcomes[0]!.reason).toBe("done");
      expect(await deliveryRow(ref.source, ref.id)).toMatchObject({ status: "done", attempts: 5 });
    }
  });
});
