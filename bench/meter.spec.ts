/**
 * Counts the billable operations of one delivery, for `npm run bench`'s cost table. It drives
 * the real receiver and consumer inside workerd with bindings that count what passes through
 * them: D1 rows read and written (from each result's `meta`), queue messages, and Durable
 * Object requests. It prints one `METER {json}` line; bench/run.mjs reads it.
 */
import { createExecutionContext, createMessageBatch, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { expect, it } from "vitest";
import { HANDLERS } from "../src/handlers";
import { app } from "../src/http/app";
import { consumeDeliveries } from "../src/processing/consumer";
import { defineHandlers } from "../src/processing/handlers";
import type { DeliveryRef } from "../src/processing/messages";

const counts = { d1Queries: 0, d1RowsRead: 0, d1RowsWritten: 0, queueMessages: 0, durableObjectRequests: 0, leaseStorageWrites: 0 };

function countResult(result: D1Result) {
  counts.d1Queries++;
  counts.d1RowsRead += result.meta.rows_read ?? 0;
  counts.d1RowsWritten += result.meta.rows_written ?? 0;
}

/** A D1 binding that counts every statement's rows. */
function meteredDb(db: D1Database): D1Database {
  const wrap = (statement: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(statement, {
      get(target, key) {
        if (key === "bind") return (...values: unknown[]) => wrap(target.bind(...values));
        if (key === "run" || key === "all") return async () => {
          const result = await (target[key] as () => Promise<D1Result>)();
          countResult(result);
          return result;
        };
        if (key === "first") return async (column?: string) => {
          const result = await target.all();
          countResult(result);
          const row = result.results[0] as Record<string, unknown> | undefined;
          return row === undefined ? null : column ? row[column] : row;
        };
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
  return new Proxy(db, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql));
      if (key === "batch") return async (statements: D1PreparedStatement[]) => {
        const results = await target.batch(statements);
        results.forEach(countResult);
        return results;
      };
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

const sent: DeliveryRef[] = [];
const meteredQueue = {
  async send(body: DeliveryRef) {
    counts.queueMessages++;
    sent.push(body);
  },
  async sendBatch(messages: Iterable<MessageSendRequest<DeliveryRef>>) {
    for (const message of messages) {
      counts.queueMessages++;
      sent.push(message.body);
    }
  },
} as unknown as Queue;

const meteredLeases = new Proxy(env.DELIVERY_LEASE, {
  get(target, key) {
    if (key === "get") {
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get(stubTarget, method) {
            if (typeof method !== "string" || !["claim", "release", "settle", "reset"].includes(method)) return Reflect.get(stubTarget, method);
            return (...args: unknown[]) => {
              counts.durableObjectRequests++;
              // An RPC stub's methods are called on the stub itself (`.apply` would be an RPC call).
              return (stubTarget as unknown as Record<string, (...a: unknown[]) => unknown>)[method]!(...args);
            };
          },
        });
      };
    }
    const value = Reflect.get(target, key, target);
    return typeof value === "function" ? value.bind(target) : value;
  },
});

it("meters one delivery's billable operations", { timeout: 120_000 }, async () => {
  const deliveries = 100;
  const metered = { ...env, DB: meteredDb(env.DB), DELIVERIES: meteredQueue, DELIVERY_LEASE: meteredLeases } as unknown as Env;
  const signer = new Webhook(env.STANDARD_WEBHOOK_SECRET);
  const requests: Request[] = [];
  for (let index = 0; index < deliveries; index++) {
    const id = `msg_meter_${index}`;
    const body = JSON.stringify({ type: "payment.succeeded", amount: 100 + index });
    const at = new Date();
    const headers = { "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signer.sign(id, at, body) };
    requests.push(new Request("https://inbox.example/webhooks/standard", { method: "POST", headers, body }));
    if (index % 10 === 0) requests.push(new Request("https://inbox.example/webhooks/standard", { method: "POST", headers, body })); // 10% sent twice
  }
  for (const request of requests) {
    const ctx = createExecutionContext();
    expect((await app.fetch(request, metered, ctx)).status).toBe(200);
    await waitOnExecutionContext(ctx);
  }
  // The example handler's shape: one keyed INSERT per delivery, committed with the done mark.
  await env.DB.exec("CREATE TABLE IF NOT EXISTS meter_effects (delivery_id TEXT PRIMARY KEY, amount INTEGER)");
  const handlers = defineHandlers({
    ...HANDLERS,
    standard: {
      "*": (event: { amount: number }, ctx) => [ctx.env.DB.prepare("INSERT OR IGNORE INTO meter_effects (delivery_id, amount) VALUES (?, ?)").bind(ctx.deliveryId, event.amount)],
    },
  });
  const ingest = { ...counts };
  const batchSize = 50; // wrangler.toml max_batch_size
  for (let start = 0; start < sent.length; start += batchSize) {
    const messages = sent.slice(start, start + batchSize).map((body, index) => ({ id: `m${start + index}`, timestamp: new Date(), attempts: 1, body }));
    const outcomes = await consumeDeliveries(createMessageBatch("webhook-deliveries", messages), metered, handlers);
    expect(outcomes.every((outcome) => outcome.action === "ack")).toBe(true);
  }
  // Every settled lease leaves nothing behind (so its storage writes are exactly claim's put + alarm, and the delete).
  const leftovers = await runInDurableObject(env.DELIVERY_LEASE.get(env.DELIVERY_LEASE.idFromName(JSON.stringify(["standard", "msg_meter_0"]))), async (_o, ctx) => (await ctx.storage.list()).size);
  expect(leftovers).toBe(0);
  const consumerBatches = Math.ceil(sent.length / batchSize);
  console.log(
    `METER ${JSON.stringify({
      deliveries,
      requests: requests.length,
      consumerBatches,
      ingest,
      total: counts,
      leaseStorageWritesPerDelivery: 3, // claim: put + setAlarm; settle: deleteAll (lease.ts)
    })}`,
  );
});
