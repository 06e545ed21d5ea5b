/**
 * The sweeper: recovers deliveries that fell through the cracks, and applies retention.
 *
 * - `received` rows that were never enqueued (the send failed, or a local queue died with
 *   `wrangler dev`) and `processing` rows whose lease expired long ago are re-enqueued; the
 *   lease and the D1 row make a duplicate message harmless.
 * - Rows older than RETENTION_DAYS are deleted; bodies of `done` rows are cleared after
 *   BODY_RETENTION_DAYS (they hold personal data).
 * - The overview's counts are carried forward, and its snapshot put together once a minute
 *   (store/d1/overview.ts), so that the dashboard and `/admin/metrics` never count the table.
 * - Alerting's beat evaluates its rules over that snapshot (at most once a minute) and sends its
 *   outbox (alerts/beat.ts).
 *
 * Two things run it, and neither needs a setting:
 * - the cron trigger (production), which reports each sweep to the `Sweeper` object;
 * - the `Sweeper` object's heartbeat alarm, every SWEEP_INTERVAL_SECONDS (default 10). It sweeps
 *   only when no cron sweep was reported in the last CRON_ALIVE_MS, so under a working cron it
 *   just re-arms, about once a minute; where no cron runs (`wrangler dev`, or a deploy whose
 *   trigger was removed) it is the sweeper. Alarms are persisted: after `kill -9` of the local
 *   runtime the heartbeat fires again on restart. SWEEP_INTERVAL_SECONDS=0 turns it off.
 */
import { DurableObject } from "cloudflare:workers";
import { checkConfig, ConfigError, loadConfig, longestBackoffSeconds } from "../config";
import { openBatchStore, openStore, type RetentionResult } from "../store";
import { MAX_RETRY_AFTER_SECONDS } from "./attempt";
import { enqueueDeliveries } from "./enqueue";
import { describeError } from "../handler-api/errors";
import { alertBeat } from "../alerts/beat";

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
  // The longest a delivery waits between attempts (the backoff, or a destination's Retry-After,
  // attempt.ts); past it (and a lease), its retry was lost.
  const longestBackoffMs = Math.max(longestBackoffSeconds(config.retryBaseSeconds, config.maxAttempts), MAX_RETRY_AFTER_SECONDS) * 1000;
  // Its three steps share a connection on Postgres.
  const store = openBatchStore(env);
  try {
    const stranded = await store.takeStranded(
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
    // Never at the edge of now: body pruning walks a watermark that never goes back, and a delivery
    // whose insert is still in flight has its received_at from before the sweep. With
    // BODY_RETENTION_DAYS = 0 the watermark could pass it, and its body would be kept until retention.
    const clearBodiesBeforeMs = Math.min(nowMs - config.bodyRetentionDays * DAY_MS, nowMs - BODY_PRUNING_MIN_AGE_MS);
    const retention = await store.applyRetention(nowMs - config.retentionDays * DAY_MS, clearBodiesBeforeMs, RETENTION_LIMIT);
    // The overview's counts move on after retention took back what it deleted (store/d1/overview.ts).
    await store.maintainOverview(nowMs);
    // Alerting reads that snapshot and its own counters, and sends its outbox (never throws).
    await alertBeat(env, store, config, nowMs);
    const report = { requeued: stranded.length, ...retention };
    if (report.requeued + report.deleted + report.bodiesCleared > 0) console.log("sweep:", JSON.stringify(report));
    return report;
  } finally {
    await store.close();
  }
}

/**
 * Bodies are cleared no sooner than this after a delivery was received, even with
 * BODY_RETENTION_DAYS = 0: far longer than any insert can be in flight (a request's store call is
 * bounded by STORE_TIMEOUT_SECONDS, 300 at most), so the pruning watermark never passes a row that
 * is yet to be written.
 */
export const BODY_PRUNING_MIN_AGE_MS = 10 * 60_000;

/** A cron sweep reported within this long means the cron is alive: the heartbeat only watches. */
export const CRON_ALIVE_MS = 180_000;
/** While the cron is alive the heartbeat re-arms at least this far ahead (about one alarm a minute). */
export const WATCH_INTERVAL_MS = 60_000;
/** With an invalid config the heartbeat cannot know its interval: it tries again this often. */
export const CONFIG_RETRY_MS = 60_000;
const LAST_CRON_SWEEP_KEY = "lastCronSweepMs";

/** What one beat of the heartbeat does: sweep or not, and when the next beat is. */
export interface Beat {
  readonly sweep: boolean;
  readonly nextAlarmMs: number;
}

/**
 * Decides a beat at `nowMs`: sweep unless the cron reported a sweep recently, in which case
 * only watch (re-arm at the longer interval) so a removed cron trigger is noticed.
 * @example
 * planBeat(now, 10_000, undefined); // { sweep: true, nextAlarmMs: now + 10_000 }
 * planBeat(now, 10_000, now - 30_000); // { sweep: false, nextAlarmMs: now + 60_000 }
 */
export function planBeat(nowMs: number, intervalMs: number, lastCronSweepMs: number | undefined): Beat {
  const cronAlive = lastCronSweepMs !== undefined && nowMs - lastCronSweepMs < CRON_ALIVE_MS;
  if (cronAlive) return { sweep: false, nextAlarmMs: nowMs + Math.max(intervalMs, WATCH_INTERVAL_MS) };
  return { sweep: true, nextAlarmMs: nowMs + intervalMs };
}

/** The one Sweeper object. */
export function sweeperFor(env: Env): DurableObjectStub<Sweeper> {
  return env.SWEEPER.get(env.SWEEPER.idFromName("sweeper"));
}

/**
 * The cron trigger's sweep at `scheduledTimeMs`, reported to the Sweeper so that its heartbeat
 * stands by. Never throws for a bad config (logged: the next run tries again).
 */
export async function sweepFromCron(env: Env, scheduledTimeMs: number): Promise<void> {
  const config = checkConfig(env);
  if (config instanceof ConfigError) {
    console.error(`cron sweep skipped until the configuration is fixed: ${config.message}`);
    return;
  }
  await sweep(env, scheduledTimeMs);
  try {
    // The cron's heartbeat: a cron seen once and then silent is an incident (alerts/rules.ts).
    await openStore(env).alerts.noteHeartbeat("cron", scheduledTimeMs);
  } catch (error) {
    console.error("could not note the cron's heartbeat:", describeError(error));
  }
  try {
    await sweeperFor(env).noteCronSweep();
  } catch (error) {
    // Harmless: the heartbeat then sweeps too (the sweep's claims are atomic).
    console.error("could not report the cron sweep to the Sweeper:", describeError(error));
  }
}

/**
 * How often an isolate checks that the heartbeat is armed: one call to the single Sweeper object
 * per isolate every 10 minutes, not per request. Checking again (not once per isolate) re-arms a
 * heartbeat whose alarm died (its retries used up) while the isolate lives on.
 */
export const HEARTBEAT_CHECK_MS = 10 * 60_000;
let heartbeatCheckedAtMs: number | null = null;

/**
 * Makes sure the heartbeat alarm is set (a no-op with SWEEP_INTERVAL_SECONDS=0). Called after each
 * stored delivery and each queue batch, and does its work at most every HEARTBEAT_CHECK_MS; never throws.
 */
export async function ensureSweepHeartbeat(env: Env): Promise<void> {
  const nowMs = Date.now();
  if (heartbeatCheckedAtMs !== null && nowMs - heartbeatCheckedAtMs < HEARTBEAT_CHECK_MS) return;
  const config = checkConfig(env);
  // A bad config is reported by the request or batch that called us.
  if (config instanceof ConfigError || config.sweepIntervalSeconds === 0) return;
  heartbeatCheckedAtMs = nowMs;
  try {
    await sweeperFor(env).ensureScheduled();
  } catch (error) {
    heartbeatCheckedAtMs = null;
    console.error("could not arm the sweep heartbeat:", describeError(error));
  }
}

/** The heartbeat: a single object whose alarm sweeps where no cron does (see the module doc). */
export class Sweeper extends DurableObject<Env> {
  /** Arms the alarm one interval ahead unless it is armed already (or the heartbeat is off). */
  async ensureScheduled(): Promise<void> {
    const intervalMs = loadConfig(this.env).sweepIntervalSeconds * 1000;
    if (intervalMs > 0 && (await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + intervalMs);
  }

  /** The cron has just swept: remember when, and make sure the heartbeat watches over it. */
  async noteCronSweep(): Promise<void> {
    await this.ctx.storage.put(LAST_CRON_SWEEP_KEY, Date.now());
    await this.ensureScheduled();
  }

  override async alarm(): Promise<void> {
    const nowMs = Date.now();
    const config = checkConfig(this.env);
    if (config instanceof ConfigError) {
      console.error(`sweep heartbeat: ${config.message}; trying again in ${CONFIG_RETRY_MS / 1000} s`);
      await this.ctx.storage.setAlarm(nowMs + CONFIG_RETRY_MS);
      return;
    }
    const intervalMs = config.sweepIntervalSeconds * 1000;
    if (intervalMs === 0) return; // turned off: not re-armed
    const beat = planBeat(nowMs, intervalMs, await this.ctx.storage.get<number>(LAST_CRON_SWEEP_KEY));
    // Re-arm first, and keep a failed sweep from throwing: the next beat is the retry.
    await this.ctx.storage.setAlarm(beat.nextAlarmMs);
    if (!beat.sweep) return;
    try {
      await sweep(this.env, nowMs);
    } catch (error) {
      console.error(`heartbeat sweep failed; next beat in ${intervalMs / 1000} s:`, describeError(error));
    }
  }
}
