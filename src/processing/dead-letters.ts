/**
 * The dead-letter queue's consumer (`webhook-deliveries-dlq`): records what landed there.
 *
 * Two kinds of message arrive. Our own, sent by the consumer after it marked a delivery
 * `failed`: recording is a log line (for alerting); the row already says failed, and writing it
 * again could undo a replay made since. And the
 * queue's, when a message exhausted the consumer queue's max_retries (e.g. D1 kept failing):
 * those deliveries are marked `failed` here, so the admin API shows them and they can be replayed.
 */
import { markFailed } from "../store/lifecycle";
import { leaseFor } from "./consumer";
import { describeError } from "./errors";
import { isDeliveryRef } from "./messages";

export async function recordDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const body = message.body;
    if (!isDeliveryRef(body)) {
      console.error("dead-letter queue: dropping a malformed message:", JSON.stringify(body)?.slice(0, 200));
      message.ack();
      continue;
    }
    if ("error" in body && typeof body.error === "string") {
      // Ours: the consumer recorded the failure before sending this. Only log it: writing again
      // could undo a replay that happened since (the row is the record, not this message).
      console.warn(`dead letter: ${body.source}/${body.id}: ${body.error}`);
      message.ack();
      continue;
    }
    const error = `dead-lettered by the queue after ${message.attempts} attempts: processing kept failing before a result could be recorded`;
    try {
      if (await markFailed(env.DB, body, null, error, Date.now())) {
        // The lease object may still hold a lease whose alarm would requeue the delivery.
        await leaseFor(env, body).reset();
      }
      console.warn(`dead letter: ${body.source}/${body.id}: ${error}`);
      message.ack();
    } catch (recordError) {
      console.error(`dead-letter queue: could not record ${body.source}/${body.id}, will retry:`, describeError(recordError));
      message.retry({ delaySeconds: 30 });
    }
  }
}
