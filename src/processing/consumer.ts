/**
 * The queue consumer: each message names a stored delivery; process it effectively once.
 *
 * Per delivery: claim its lease (DeliveryLease), mark it `processing` in D1 (which also reads
 * the body), run the user's handler, commit the handler's effects together with the `done` mark
 * in one fenced D1 transaction, and settle the lease. What a handler throws decides the rest
 * (attempt.ts): `PermanentError` fails at once; anything else retries with backoff until
 * MAX_ATTEMPTS, then fails. Failed deliveries go to the dead-letter queue.
 *
 * A batch goes through those steps together, so its D1 work is two round trips, not two per
 * message: one `batch()` marks every claimed delivery `processing`, and one commits every
 * successful delivery's done mark and effects. That commit is all or nothing, so if it fails
 * (a lost lease, an effect that violates a constraint), each delivery is committed again on its
 * own, and only the one at fault is affected.
 *
 * Every message is acked only once its delivery is handled, recorded, or known to be someone
 * else's (busy, settled, lease lost). When D1 or the lease object fails, the message is retried
 * and nothing is acked; the queue's max_retries and dead-letter queue are the last resort behind
 * that, and the lease's alarm and the sweeper behind those.
 */
import { loadConfig, type InboxConfig } from "../config";
import { claimedDelivery, commitDone, markDone, markProcessing, type ClaimedDelivery } from "../store/lifecycle";
import { failDelivery, handleFailure, runHandler, type HandledDelivery, type Outcome } from "./attempt";
import { describeError } from "./errors";
import type { HandlerRegistry } from "./handlers";
import type { DeliveryLease } from "./lease";
import { isDeliveryRef, leaseName, type DeliveryRef } from "./messages";

export type { Outcome } from "./attempt";

/** Handlers of one batch running at once: enough to overlap their I/O, bounded. */
export const BATCH_CONCURRENCY = 8;
/** Delay before retrying a message whose processing hit an infrastructure error. */
export const INFRASTRUCTURE_RETRY_SECONDS = 10;

/** One message on its way through the batch; `outcome` is set once its fate is known. */
interface Job {
  readonly index: number;
  readonly message: Message<unknown>;
  readonly ref: DeliveryRef;
  readonly lease: DurableObjectStub<DeliveryLease>;
  outcome?: Outcome;
  token?: number;
  attempt?: number;
  delivery?: ClaimedDelivery;
  handled?: HandledDelivery;
  committed?: boolean;
}

/** The lease object of one delivery. */
export function leaseFor(env: Env, ref: DeliveryRef): DurableObjectStub<DeliveryLease> {
  return env.DELIVERY_LEASE.get(env.DELIVERY_LEASE.idFromName(leaseName(ref)));
}

/** Processes a batch from `webhook-deliveries`; each message is acked or retried on its own. */
export async function consumeDeliveries(batch: MessageBatch<unknown>, env: Env, handlers: HandlerRegistry): Promise<Outcome[]> {
  const config = loadConfig(env);
  const outcomes: Outcome[] = new Array(batch.messages.length);
  const jobs: Job[] = [];
  batch.messages.forEach((message, index) => {
    if (isDeliveryRef(message.body)) {
      jobs.push({ index, message, ref: message.body, lease: leaseFor(env, message.body) });
    } else {
      // Only a bug or a hand-sent message looks like this; there is no delivery to record it on.
      console.error("dropping a malformed queue message:", JSON.stringify(message.body)?.slice(0, 200));
      outcomes[index] = { action: "ack", reason: "malformed" };
    }
  });

  await eachOpen(jobs, BATCH_CONCURRENCY, (job) => claim(job, env));
  await markAllProcessing(jobs.filter(isOpen), env);
  await eachOpen(jobs, BATCH_CONCURRENCY, (job) => handle(job, env, config, handlers));
  await commitAll(jobs.filter((job) => isOpen(job) && job.handled), env, config);
  await eachOpen(jobs, BATCH_CONCURRENCY, settle);

  for (const job of jobs) {
    const outcome = job.outcome!; // every step either decides a job or leaves it to settle(), which decides
    if (outcome.action === "ack") job.message.ack();
    else job.message.retry({ delaySeconds: outcome.delaySeconds });
    outcomes[job.index] = outcome;
  }
  return outcomes;
}

function isOpen(job: Job): boolean {
  return job.outcome === undefined;
}

/** Runs `step` over the jobs still open, `limit` at a time; an error ends that job as an infrastructure failure. */
async function eachOpen(jobs: readonly Job[], limit: number, step: (job: Job) => Promise<void>): Promise<void> {
  const open = jobs.filter(isOpen);
  let next = 0;
  const worker = async () => {
    while (next < open.length) {
      const job = open[next++]!;
      try {
        await step(job);
      } catch (error) {
        job.outcome = infrastructureFailure(job, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, limit), open.length) }, worker));
}

function infrastructureFailure(job: Job, error: unknown): Outcome {
  console.error(`processing ${job.ref.source}/${job.ref.id} hit an infrastructure error, will retry:`, describeError(error));
  return { action: "retry", reason: "infrastructure", delaySeconds: INFRASTRUCTURE_RETRY_SECONDS };
}

async function claim(job: Job, env: Env): Promise<void> {
  const result = await job.lease.claim(job.ref);
  if (result.kind === "busy" || result.kind === "settled") {
    // Someone holds it (and its alarm will requeue it if they die), or it is finished.
    job.outcome = { action: "ack", reason: result.kind };
  } else if (result.kind === "exhausted") {
    await failDelivery(env, job.ref, null, `gave up: the worker kept crashing (${result.attempts} attempts without a result)`);
    await job.lease.settle(result.token);
    job.outcome = { action: "ack", reason: "exhausted" };
  } else {
    job.token = result.token;
    job.attempt = result.attempt;
  }
}

/** One D1 batch marks every claimed delivery `processing` and reads its body. */
async function markAllProcessing(jobs: Job[], env: Env): Promise<void> {
  if (jobs.length === 0) return;
  const now = Date.now();
  let results: D1Result[];
  try {
    results = await env.DB.batch(jobs.map((job) => markProcessing(env.DB, job.ref, job.token!, job.attempt!, now)));
  } catch (error) {
    for (const job of jobs) job.outcome = infrastructureFailure(job, error);
    return;
  }
  jobs.forEach((job, index) => {
    const delivery = claimedDelivery(results[index]!);
    if (delivery) job.delivery = delivery;
  });
}

async function handle(job: Job, env: Env, config: InboxConfig, handlers: HandlerRegistry): Promise<void> {
  if (!job.delivery) {
    // Done or failed already (the D1 row is the judge), or a newer claim got there first.
    await job.lease.settle(job.token!);
    job.outcome = { action: "ack", reason: "settled" };
    return;
  }
  try {
    job.handled = await runHandler(env, handlers, job.ref, job.delivery, job.attempt!);
  } catch (error) {
    job.outcome = await handleFailure(error, env, config, job.ref, job.lease, job.token!, job.attempt!);
  }
}

/** One D1 batch commits every handled delivery with its effects; if it fails, each on its own. */
async function commitAll(jobs: Job[], env: Env, config: InboxConfig): Promise<void> {
  if (jobs.length === 0) return;
  const now = Date.now();
  if (jobs.length > 1) {
    try {
      await env.DB.batch(jobs.flatMap((job) => [markDone(env.DB, job.ref, job.token!, job.handled!.handled, now), ...job.handled!.effects]));
      for (const job of jobs) job.committed = true;
      return;
    } catch {
      // One of them is at fault (a lost lease, a bad effect) or D1 failed: retry each alone.
    }
  }
  await eachOpen(jobs, BATCH_CONCURRENCY, async (job) => {
    try {
      if ((await commitDone(env.DB, job.ref, job.token!, job.handled!.handled, job.handled!.effects, now)) === "lease_lost") {
        // Our lease ran out and another worker took over: its result stands, ours committed nothing.
        job.outcome = { action: "ack", reason: "lease_lost" };
      } else {
        job.committed = true;
      }
    } catch (error) {
      job.outcome = await handleFailure(error, env, config, job.ref, job.lease, job.token!, job.attempt!);
    }
  });
}

/** Forgets the lease of a committed delivery: it is done. */
async function settle(job: Job): Promise<void> {
  if (!job.committed) throw new Error("a delivery reached the end of the batch without an outcome"); // a bug, retried
  await job.lease.settle(job.token!);
  job.outcome = { action: "ack", reason: job.handled!.handled ? "done" : "unhandled" };
}
