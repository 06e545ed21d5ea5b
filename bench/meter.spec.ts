/**
 * Counts the billable operations of one delivery, for `npm run bench`'s cost table. It drives
 * the real receiver and consumer inside workerd with bindings that count what passes through
 * them: D1 statements, round trips and rows read and written (from each result's `meta`; the
 * handler's own effect apart), queue messages, Durable Object requests, and the lease objects'
 * storage writes (each object's storage calls, counted as rows: a `put` per key, a `setAlarm`,
 * a `deleteAlarm`, a `delete` per key, a `deleteAll` per key and alarm it removes). It prints one
 * `METER {json}` line; bench/run.mjs reads it.
 */
import { createExecutionContext, createMessageBatch, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { expect, it } from "vitest";
import { HANDLERS } from "../src/handlers";
import { app } from "../src/http/app";
import { consumeDeliveries } from "../src/processing/consumer";
import { defineHandlers } from "../src/handler-api";
import { registryResolver } from "../src/handler-api/registry";
import type { DeliveryRef } from "../src/processing/messages";
import { runsOf } from "../test/helpers/recording-producer";
import { fireAlarm } from "../test/helpers/alarms";

/** Requests in flight at once: bench/run.mjs's load generator keeps 16 connections open. */
const CONNECTIONS = 16;

const counts = {
  d1Statements: 0,
  d1RoundTrips: 0,
  d1RowsRead: 0,
  d1RowsWritten: 0,
  /** Of those, the example handler's own effect (not the inbox's cost). */
  effectStatements: 0,
  effectRowsWritten: 0,
  queueMessages: 0,
  durableObjectRequests: 0,
  leaseStorageRowsWritten: 0,
};

const sqlOf = new WeakMap<object, string>();
const EFFECT_TABLE = "meter_effects";

function countResult(result: D1Result, sql: string | undefined) {
  counts.d1Statements++;
  counts.d1RowsRead += result.meta.rows_read ?? 0;
  counts.d1RowsWritten += result.meta.rows_written ?? 0;
  if (sql?.includes(EFFECT_TABLE)) {
    counts.effectStatements++;
    counts.effectRowsWritten += result.meta.rows_written ?? 0;
  }
}

/** A D1 binding that counts every statement's rows. */
function meteredDb(db: D1Database): D1Database {
  const wrap = (statement: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const proxy: D1PreparedStatement = new Proxy(statement, {
      get(target, key) {
        if (key === "bind") return (...values: unknown[]) => wrap(target.bind(...values), sql);
        if (key === "run" || key === "all") return async () => {
          const result = await (target[key] as () => Promise<D1Result>)();
          counts.d1RoundTrips++;
          countResult(result, sql);
          return result;
        };
        if (key === "first") return async (column?: string) => {
          const result = await target.all();
          counts.d1RoundTrips++;
          countResult(result, sql);
          const row = result.results[0] as Record<string, unknown> | undefined;
          return row === undefined ? null : column ? row[column] : row;
        };
        const value = Reflect.get(target, key, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    sqlOf.set(proxy, sql);
    return proxy;
  };
  return new Proxy(db, {
    get(target, key) {
      if (key === "prepare") return (sql: string) => wrap(target.prepare(sql), sql);
      if (key === "batch") return async (statements: D1PreparedStatement[]) => {
        const results = await target.batch(statements);
        counts.d1RoundTrips++;
        results.forEach((result, index) => countResult(result, sqlOf.get(statements[index]!)));
        return results;
      };
      const value = Reflect.get(target, key, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The messages sent (a run, or a bundle of runs), and the runs they carry. */
const messagesSent: unknown[] = [];
const sent: DeliveryRef[] = [];
const meteredQueue = {
  async send(body: unknown) {
    counts.queueMessages++;
    messagesSent.push(body);
    sent.push(...(runsOf(body) as DeliveryRef[]));
  },
  async sendBatch(messages: Iterable<MessageSendRequest>) {
    for (const message of messages) {
      counts.queueMessages++;
      messagesSent.push(message.body);
      sent.push(...(runsOf(message.body) as DeliveryRef[]));
    }
  },
} as unknown as Queue;

/**
 * Counts the storage writes of a delivery's lease object from now on, as rows (what SQLite-backed
 * Durable Object storage bills): each key a `put` writes, each `setAlarm`, each `deleteAlarm`
 * (one per call, whether or not an alarm was set: the count errs high, never low), each key a
 * `delete` names, and for `deleteAll` each key and the alarm it removes.
 */
async function countLeaseStorage(ref: DeliveryRef): Promise<void> {
  const stub = env.DELIVERY_LEASE.get(env.DELIVERY_LEASE.idFromName(JSON.stringify([ref.source, ref.id])));
  await runInDurableObject(stub, (_instance, ctx) => {
    const storage = ctx.storage as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
    const real = Object.fromEntries(["put", "setAlarm", "deleteAlarm", "delete", "deleteAll", "list", "getAlarm"].map((name) => [name, storage[name]!.bind(storage)]));
    storage.put = (key, ...rest) => {
      counts.leaseStorageRowsWritten += typeof key === "string" ? 1 : Object.keys(key as object).length;
      return real.put!(key, ...rest);
    };
    storage.setAlarm = (...args) => {
      counts.leaseStorageRowsWritten++;
      return real.setAlarm!(...args);
    };
    storage.deleteAlarm = (...args) => {
      counts.leaseStorageRowsWritten++;
      return real.deleteAlarm!(...args);
    };
    storage.delete = (keys, ...rest) => {
      counts.leaseStorageRowsWritten += Array.isArray(keys) ? keys.length : 1;
      return real.delete!(keys, ...rest);
    };
    storage.deleteAll = async (...args) => {
      const keys = ((await real.list!()) as Map<string, unknown>).size;
      const alarm = (await real.getAlarm!()) === null ? 0 : 1;
      counts.leaseStorageRowsWritten += keys + alarm;
      return real.deleteAll!(...args);
    };
  });
}

const meteredLeases = new Proxy(env.DELIVERY_LEASE, {
  get(target, key) {
    if (key === "get") {
      return (id: DurableObjectId) => {
        const stub = target.get(id);
        return new Proxy(stub, {
          get(stubTarget, method) {
            if (typeof method !== "string" || !["claim", "renew", "release", "settle", "reset"].includes(method)) return Reflect.get(stubTarget, method);
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
  // Under load: requests arrive CONNECTIONS at a time, as from the bench's load generator, so that
  // deliveries stored together share queue messages as they do under load (processing/enqueue.ts).
  for (let start = 0; start < requests.length; start += CONNECTIONS) {
    await Promise.all(
      requests.slice(start, start + CONNECTIONS).map(async (request) => {
        const ctx = createExecutionContext();
        expect((await app.fetch(request, metered, ctx)).status).toBe(200);
        await waitOnExecutionContext(ctx);
      }),
    );
  }
  // The example handler's shape: one keyed INSERT per delivery, committed with the done mark.
  // Keyed like the example's `payments` table (migrations/0007: WITHOUT ROWID, one row per effect).
  await env.DB.exec("CREATE TABLE IF NOT EXISTS meter_effects (delivery_id TEXT NOT NULL PRIMARY KEY, amount INTEGER) WITHOUT ROWID");
  const handlers = defineHandlers({
    ...HANDLERS,
    standard: {
      "*": (event: { amount: number }, ctx) => [ctx.env.DB.prepare("INSERT OR IGNORE INTO meter_effects (delivery_id, amount) VALUES (?, ?)").bind(ctx.deliveryId, event.amount)],
    },
  });
  const ingest = { ...counts };
  for (const ref of new Map(sent.map((ref) => [ref.id, ref])).values()) await countLeaseStorage(ref);
  const batchSize = 50; // wrangler.toml max_batch_size
  for (let start = 0; start < messagesSent.length; start += batchSize) {
    const messages = messagesSent.slice(start, start + batchSize).map((body, index) => ({ id: `m${start + index}`, timestamp: new Date(), attempts: 1, body }));
    const outcomes = await consumeDeliveries(createMessageBatch("webhook-deliveries", messages), metered, registryResolver(handlers));
    expect(outcomes.every((outcome) => outcome.action === "ack")).toBe(true);
  }
  expect(counts.leaseStorageRowsWritten).toBeGreaterThan(0);
  // A finished delivery's settle leaves its lease's alarm (a write saved): each fires once, a
  // Durable Object request, finds the lease settled, and writes nothing.
  for (const ref of new Map(sent.map((ref) => [ref.id, ref])).values()) {
    const stub = env.DELIVERY_LEASE.get(env.DELIVERY_LEASE.idFromName(JSON.stringify([ref.source, ref.id])));
    if (await fireAlarm(stub)) counts.durableObjectRequests++;
  }
  // Then every settled lease has left nothing behind: no key, and no alarm.
  let leftovers = 0;
  let alarmsLeft = 0;
  for (const ref of new Map(sent.map((ref) => [ref.id, ref])).values()) {
    const stub = env.DELIVERY_LEASE.get(env.DELIVERY_LEASE.idFromName(JSON.stringify([ref.source, ref.id])));
    await runInDurableObject(stub, async (_o, ctx) => {
      leftovers += (await ctx.storage.list()).size;
      if ((await ctx.storage.getAlarm()) !== null) alarmsLeft++;
    });
  }
  expect(leftovers).toBe(0);
  expect(alarmsLeft).toBe(0);
  const consumerBatches = Math.ceil(messagesSent.length / batchSize);
  console.log(
    `METER ${JSON.stringify({
      deliveries,
      requests: requests.length,
      consumerBatches,
      ingest,
      total: counts,
    })}`,
  );
});
