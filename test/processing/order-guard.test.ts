import { beforeAll, describe, expect, it } from "vitest";
import { defineHandlers, type Handler } from "../../src/processing/handlers";
import { sql } from "../../src/sql";
import { consume, gate, storeDelivery } from "../helpers/processing";
import { deliveryRow, exec, firstRow } from "../helpers/store-db";

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
});
