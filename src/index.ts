/**
 * webhook-inbox: the Worker's entry points, wired and nothing else.
 *
 * - fetch: the Hono app (receiver, health, admin API, dashboard)
 * - queue: the delivery consumer, and the dead-letter recorder for the dead-letter queue; both
 *   wait (the batch is retried with a delay) while the configuration is invalid
 * - scheduled: the sweeper (cron), reported to the Sweeper object
 * - Durable Objects: DeliveryLease (one per delivery), Sweeper (the sweep heartbeat) and
 *   SignInThrottle (the dashboard's failed sign-ins, one per client address)
 */
import { withConfiguredForwarding } from "./forwarding/resolver";
import { HANDLERS } from "./handlers";
import { app } from "./http/app";
import { deferIfConfigInvalid } from "./processing/config-wait";
import { consumeDeliveries } from "./processing/consumer";
import { noteConsumerHeartbeat } from "./processing/consumer-heartbeat";
import { recordDeadLetters } from "./processing/dead-letters";
import { DEAD_LETTER_QUEUE } from "./processing/messages";
import { ensureSweepHeartbeat, sweepFromCron } from "./processing/sweeper";

export { DeliveryLease } from "./processing/lease";
export { Sweeper } from "./processing/sweeper";
export { SignInThrottle } from "./http/ui/sign-in-throttle";
export { ForwardLimiter } from "./forwarding/limiter";

/** The handlers a delivery runs: the source's code handler, then its configured forward. */
const RESOLVE_HANDLERS = withConfiguredForwarding(HANDLERS);

export default {
  fetch: app.fetch,

  async queue(batch, env) {
    if (deferIfConfigInvalid(batch, env)) return;
    if (batch.queue === DEAD_LETTER_QUEUE) return recordDeadLetters(batch, env);
    await Promise.all([consumeDeliveries(batch, env, RESOLVE_HANDLERS), ensureSweepHeartbeat(env), noteConsumerHeartbeat(env)]);
  },

  async scheduled(controller, env) {
    await sweepFromCron(env, controller.scheduledTime);
  },
} satisfies ExportedHandler<Env, unknown>;
