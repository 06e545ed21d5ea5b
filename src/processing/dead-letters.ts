/**
 * The dead-letter queue's consumer (`webhook-deliveries-dlq`): records what landed there.
 *
 * Two kinds of message arrive, and neither changes a delivery's state in D1:
 *
 * - Our own, sent by the consumer after it marked a delivery `failed` (MAX_ATTEMPTS used up, a
 *   `PermanentError`, or a worker that kept crashing): the row is the record, and this is a log
 *   line for alerting. Writing the row again could undo a replay made since.
 * - The queue's, when one message exhausted the consumer queue's `max_retries`. That says nothing
 *   about the delivery: its handler's attempts are counted in D1 and its retry policy decided
 *   there, and a message that kept meeting an infrastructure error (D1 or the lease objects
 *   browning out for longer than the retries spanned) was never handled at all. Failing it would
 *   fail work that a retry carries through, and could fail a delivery a live worker holds or one
 *   replayed meanwhile. So the delivery goes back on the processing queue, after a pause; its
 *   next claim meets the D1 row, which says what is left to do.
 */
import { describeError } from "../handler-api/errors";
import { describeRun, isDeliveryRef, isRunBundle, runMessage } from "./messages";

/** How long a delivery the queue gave up on waits before it is processed again. */
export const REQUEUE_DELAY_SECONDS = 300;

export async function recordDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  for (const message of batch.messages) {
    const body = message.body;
    if (isRunBundle(body)) {
      await requeueBundle(message, body.runs, env);
      continue;
    }
    if (!isDeliveryRef(body)) {
      console.error("dead-letter queue: dropping a malformed message:", JSON.stringify(body)?.slice(0, 200));
      message.ack();
      continue;
    }
    if ("error" in body && typeof body.error === "string") {
      console.warn(`dead letter: ${describeRun(body)}: ${body.error}`);
      message.ack();
      continue;
    }
    try {
      await env.DELIVERIES.send(runMessage(body), { contentType: "json", delaySeconds: REQUEUE_DELAY_SECONDS });
      console.warn(
        `dead-letter queue: ${describeRun(body)} used up the queue's retries (${message.attempts} deliveries of its last message); back on the queue in ${REQUEUE_DELAY_SECONDS} s`,
      );
      message.ack();
    } catch (error) {
      console.error(`dead-letter queue: could not requeue ${describeRun(body)}, will retry:`, describeError(error));
      message.retry({ delaySeconds: 60 });
    }
  }
}

/**
 * A bundle (messages.ts) reaches this queue only when its runs could not be split out of it ten
 * times over (bundles.ts): each goes back alone, after the same pause.
 */
async function requeueBundle(message: Message<unknown>, runs: readonly unknown[], env: Env): Promise<void> {
  const refs = runs.filter(isDeliveryRef).map(runMessage);
  if (refs.length < runs.length) console.error(`dead-letter queue: dropping ${runs.length - refs.length} malformed runs of a bundle`);
  try {
    if (refs.length > 0) {
      await env.DELIVERIES.sendBatch(refs.map((ref) => ({ body: ref, contentType: "json" as const, delaySeconds: REQUEUE_DELAY_SECONDS })));
    }
    console.warn(`dead-letter queue: a bundle of ${refs.length} runs used up the queue's retries; each back on the queue in ${REQUEUE_DELAY_SECONDS} s`);
    message.ack();
  } catch (error) {
    console.error(`dead-letter queue: could not requeue a bundle of ${refs.length} runs, will retry:`, describeError(error));
    message.retry({ delaySeconds: 60 });
  }
}
