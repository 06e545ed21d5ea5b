/**
 * The sweeper: recovers deliveries that fell through the cracks, and applies retention.
 *
 * - `received` rows that were never enqueued (the send failed, or a local queue died with
 *   `wrangler dev`) and `processing` rows whose lease expired long ago are re-enqueued; the
 *   lease and the D1 row make a duplicate message harmless.
 * - Rows older than RETENTION_DAYS are deleted; bodies of `done` rows are cleared after
 *   BODY_RETENTION_DAYS (they hold personal data).
 *
 * Production runs it from the cron trigger. `wrangler dev` runs no cron, so with
 * SWEEP_INTERVAL_SECONDS > 0 (set in .dev.vars) the `Sweeper` Durable Object runs it from an
 * alarm instead; alarms are persisted and fire again after the runtime restarts.
 */
import { DurableObject } from "cloudflare:workers";
import { loadConfig } from "../config";
import { applyRetention, takeStranded, type RetentionResult } from "../store/sweep";
import { enqueueDeliveries } from "./enqueue";
import { describeError } from "./errors";

/** At most this many deliveries re-enqueued per run. */
export const SWEEP_LIMIT = 500;
/** At most this many rows deleted (and bodies cleared) per run. */
export const RETENTION_LIMIT = 1_000;
const DAY_MS = 86_400_000;

export interface SweepReport extends RetentionResult {
  readonly requeued: number;
}

/** One sweep at `nowMs`. */
export async function sweep(env: Env, nowMs: number): Promise<SweepReport> {
  const config = loadConfig(env);
  const afterMs = config.sweepAfterSeconds * 1000;
  const leaseMs = config.leaseSeconds * 1000;
  // The longest a delivery waits between attempts; past it (and a lease), its retry was lost.
  const longestBackoffMs = config.retryBaseSeconds * 1000 * 2 ** Math.max(0, config.maxAttempts - 2);
  const stranded = await takeStranded(
    env.DB,
    {
      neverAttemptedBeforeMs: nowMs - afterMs,
      retryWaitingBeforeMs: nowMs - afterMs - longestBackoffMs - leaseMs,
      processingBeforeMs: nowMs - afterMs - leaseMs,
    },
    nowMs,
    SWEEP_LIMIT,
  );
  // A failed send is logged and the rows stay stranded: the next run after SWEEP_AFTER_SECONDS retries them.
  if (stranded.length > 0) await enqueueDeliveries(env, stranded);
  const retention = await applyRetention(env.DB, nowMs - config.retentionDays * DAY_MS, nowMs - config.bodyRetentionDays * DAY_MS, RETENTION_LIMIT);
  const report = { requeued: stranded.length, ...retention };
  if (report.requeued + report.deleted + report.bodiesCleared > 0) console.log("sweep:", JSON.stringify(report));
  return report;
}

let heartbeatChecked = false;

/**
 * Makes sure the local heartbeat alarm is set (once per isolate; a no-op where
 * SWEEP_INTERVAL_SECONDS is 0, as in production, which has the cron).
 */
export async function ensureSweepHeartbeat(env: Env): Promise<void> {
  if (heartbeatChecked || loadConfig(env).sweepIntervalSeconds === 0) return;
  heartbeatChecked = true;
  try {
    await env.SWEEPER.get(env.SWEEPER.idFromName("sweeper")).ensureScheduled();
  } catch (error) {
    heartbeatChecked = false;
    console.error("could not arm the sweep heartbeat:", describeError(error));
  }
}

/** The heartbeat: a single object whose alarm runs the sweeper every SWEEP_INTERVAL_SECONDS. */
export class Sweeper extends DurableObject<Env> {
  async ensureScheduled(): Promise<void> {
    const intervalMs = loadConfig(this.env).sweepIntervalSeconds * 1000;
    if (intervalMs > 0 && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + intervalMs);
  }

  override async alarm(): Promise<void> {
    const intervalMs = loadConfig(this.env).sweepIntervalSeconds * 1000;
    // Re-arm first: a sweep that throws is retried by the platform, and the heartbeat goes on.
    if (intervalMs > 0) await this.ctx.storage.setAlarm(Date.now() + intervalMs);
    await sweep(this.env, Date.now());
  }
}
