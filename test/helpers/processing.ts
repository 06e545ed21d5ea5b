/** Drives the real consumer, lease objects and store (D1 or Postgres) inside the Workers runtime. */
import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { vi } from "vitest";
import { withConfiguredForwarding } from "../../src/forwarding/resolver";
import { consumeDeliveries } from "../../src/processing/consumer";
import type { HandlerRegistry } from "../../src/handler-api";
import { leaseFor, type DeliveryLease } from "../../src/processing/lease";
import type { DeliveryRef, RunBundle, RunRef } from "../../src/processing/messages";
import { sql } from "../../src/sql";
import { exec, recordDelivery, rows } from "./store-db";
import { runsOf } from "./recording-producer";

let messageCounter = 0;

/** Stores a delivery as the receiver would (through the store, without the queue). */
export async function storeDelivery(ref: DeliveryRef, event: unknown = {}, eventType: string | null = "test.event"): Promise<void> {
  const body = new TextEncoder().encode(typeof event === "string" ? event : JSON.stringify(event));
  await recordDelivery({ ...ref, eventType, body, receivedAtMs: Date.now() });
}

/**
 * Runs one queue batch of `refs` through the consumer; returns the outcomes and the ack/retry result.
 * `options.attempts`: how often the queue has delivered these messages already (1: the first time).
 */
export async function consume(refs: readonly (RunRef | RunBundle)[], handlers: HandlerRegistry, overrides: Partial<Env> = {}, options: { attempts?: number } = {}) {
  const batch = createMessageBatch<RunRef | RunBundle>(
    "webhook-deliveries",
    refs.map((body) => ({ id: `message-${++messageCounter}`, timestamp: new Date(), attempts: options.attempts ?? 1, body })),
  );
  // The test batch records retry() calls but not their options: spy to see the delays asked for.
  const retryDelays: (number | undefined)[] = [];
  for (const message of batch.messages) {
    const retry = message.retry.bind(message);
    message.retry = (options?: QueueRetryOptions) => {
      retryDelays.push(options?.delaySeconds);
      retry(options);
    };
  }
  const ctx = createExecutionContext();
  const outcomes = await consumeDeliveries(batch, { ...env, ...overrides } as Env, withConfiguredForwarding(handlers));
  await waitOnExecutionContext(ctx);
  return { outcomes, retryDelays, result: await getQueueResult(batch, ctx) };
}

export { leaseFor };

/** A queue producer that records what it is asked to send and passes it on to the real queue. */
export function recordingQueue(queue: Queue) {
  const sent: unknown[] = [];
  const producer = {
    async send(body: unknown, options?: QueueSendOptions) {
      sent.push(...runsOf(body));
      return queue.send(body, options);
    },
    async sendBatch(messages: Iterable<MessageSendRequest>, options?: QueueSendBatchOptions) {
      const list = [...messages];
      for (const message of list) sent.push(...runsOf(message.body));
      return queue.sendBatch(list, options);
    },
  };
  return { sent, producer: producer as unknown as Queue };
}

/**
 * A queue producer that only records what it is asked to send (a fanned-out delivery's runs), for
 * the test to consume with its own handlers: the real queue's consumer runs the Worker's handlers.
 */
export function capturingQueue() {
  let sent: RunRef[] = [];
  const producer = {
    async send(body: unknown) {
      sent.push(...(runsOf(body) as RunRef[]));
    },
    async sendBatch(messages: Iterable<MessageSendRequest>) {
      for (const message of messages) sent.push(...(runsOf(message.body) as RunRef[]));
    },
  };
  return {
    get sent() {
      return sent;
    },
    /** What was sent since the last take, and forgets it. */
    take(): RunRef[] {
      const taken = sent;
      sent = [];
      return taken;
    },
    producer: producer as unknown as Queue,
  };
}

/** A subscriber's run of a fanned-out delivery, as stored (subscriber_runs). */
export async function runRow(ref: DeliveryRef, subscriber: string): Promise<Record<string, unknown> | undefined> {
  const found = await rows(sql`SELECT status, attempts, error, handled, lease_token FROM subscriber_runs WHERE source = ${ref.source} AND id = ${ref.id} AND subscriber = ${subscriber}`);
  return found[0];
}

/** A promise plus its resolver, to hold a handler mid-job. */
export function gate<T = void>() {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/** Creates the test-only effect tables, in whichever store runs: one keyed by delivery id, one not. */
export async function createEffectTables(): Promise<void> {
  await exec(
    sql`CREATE TABLE IF NOT EXISTS keyed_effects (delivery_id TEXT PRIMARY KEY, note TEXT)`,
    sql`CREATE TABLE IF NOT EXISTS unkeyed_effects (delivery_id TEXT NOT NULL, note TEXT)`,
  );
}

/**
 * Runs a lease object's alarm as it would fire once the current lease has run out: the clock is
 * moved past the lease (LEASE_SECONDS, 60 in the tests) while it runs. Returns whether an alarm ran.
 */
export async function expireLease(stub: DurableObjectStub<DeliveryLease>, leaseSeconds = 60): Promise<boolean> {
  const realNow = Date.now.bind(Date);
  const clock = vi.spyOn(Date, "now").mockImplementation(() => realNow() + (leaseSeconds + 1) * 1000);
  try {
    return await runDurableObjectAlarm(stub);
  } finally {
    clock.mockRestore();
  }
}
