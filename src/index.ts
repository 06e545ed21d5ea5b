/**
 * webhook-inbox: the Worker's entry points, wired and nothing else.
 *
 * - fetch: the Hono app (receiver, health, admin API)
 * - queue: the delivery consumer and the dead-letter recorder
 * - scheduled: the sweeper (cron)
 * - Durable Objects: DeliveryLease (one per delivery) and Sweeper (the local-dev heartbeat)
 */
import { app } from "./http/app";
import type { DeliveryRef } from "./processing/messages";

export { DeliveryLease } from "./processing/lease";
export { Sweeper } from "./processing/sweeper";

export default {
  fetch: app.fetch,
  async queue(batch) {
    // Replaced by the consumer in the processing issue; until then every message is retried.
    batch.retryAll();
  },
} satisfies ExportedHandler<Env, DeliveryRef>;
