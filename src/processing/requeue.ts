/**
 * Settling a queue message as its delivery's outcome says: acked, or back on the queue after a delay.
 *
 * The queue's own retry limit (`max_retries` in wrangler.toml) counts the deliveries of one message,
 * whatever they were. A delivery that waits for long on purpose uses it up: a destination down
 * behind its circuit breaker defers it again and again, and while the backlog drains each newer
 * delivery waits 1 s at a time for its turn (forwarding/arrival.ts). Retried every time, such a
 * message would reach the dead-letter queue, whose consumer puts it back only after
 * REQUEUE_DELAY_SECONDS: delayed for minutes, and out of its turn. So a retry the delivery asked for
 * (a deferral, or its handler's retry after the backoff) is, from the FRESH_MESSAGE_AFTER-th delivery
 * of one message on, sent as a fresh message with the same delay, and the old one acked: the same
 * wait, a new count. It costs one queue write more every few deferrals, in outages only.
 *
 * An infrastructure retry keeps its message: its backoff grows with the message's deliveries, and
 * after `max_retries` the dead-letter queue's pause is the rest a browning-out database gets.
 * A fresh message that cannot be sent falls back to the retry: never lost, at worst late.
 */
import { describeError } from "../handler-api/errors";
import type { Outcome } from "./attempt";
import { describeRun, runMessage, type RunRef } from "./messages";

/**
 * From this many deliveries of one message, a deferral or a handler's retry goes on as a fresh
 * message: well under wrangler.toml's `max_retries` (10), and few enough writes (one in five).
 */
export const FRESH_MESSAGE_AFTER = 5;

/** Acks or retries `message` (whose body is `ref`) as `outcome` says. Never throws. */
export async function settleMessage(message: Message<unknown>, ref: RunRef | null, outcome: Outcome, queue: Queue): Promise<void> {
  if (outcome.action === "ack") return message.ack();
  if (ref !== null && outcome.reason !== "infrastructure" && message.attempts >= FRESH_MESSAGE_AFTER) {
    try {
      await queue.send(runMessage(ref), { contentType: "json", delaySeconds: outcome.delaySeconds });
      return message.ack();
    } catch (error) {
      console.error(`consumer: could not send ${describeRun(ref)} as a fresh message; retried instead:`, describeError(error));
    }
  }
  message.retry({ delaySeconds: outcome.delaySeconds });
}
