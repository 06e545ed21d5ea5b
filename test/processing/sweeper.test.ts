import { createScheduledController, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { loadConfig } from "../../src/config";
import worker from "../../src/index";
import { BODY_PRUNING_MIN_AGE_MS, CONFIG_RETRY_MS, CRON_ALIVE_MS, ensureSweepHeartbeat, HEARTBEAT_CHECK_MS, planBeat, sweep, sweeperFor, WATCH_INTERVAL_MS } from "../../src/processing/sweeper";
import { sql, SqlStatement, type SqlValue } from "../../src/sql";
import { recordingQueue, storeDelivery } from "../helpers/processing";
import { deliveryRow, exec, recordDelivery } from "../helpers/store-db";

const MINUTE = 60_000;
const DAY = 86_400_000;
// A controlled clock: a minute boundary a day ahead of the real one, so no alarm set from it
// falls due (and fires by itself) while a test runs. Date in this isolate, the Durable Objects'
// included, reads it.
const NOW = Math.ceil(Date.now() / MINUTE) * MINUTE + DAY;

beforeEach(() => {
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(NOW);
});
afterEach(() => {
  vi.useRealTimers();
});

async function age(source: string, id: string, fields: Record<string, SqlValue>): Promise<void> {
  const columns = Object.keys(fields);
  // UPDATE deliveries SET a = ${…}, b = ${…} WHERE source = ${source} AND id = ${id}
  const text = ["UPDATE deliveries SET ", ...columns.slice(1).map((column) => `, ${column} = `), " WHERE source = ", " AND id = ", ""];
  text[0] += `${columns[0]} = `;
  await exec(new SqlStatement(text, [...Object.values(fields), source, id]));
}

const iso = (ms: number) => new Date(ms).toISOString();
/** A delivery stored `ms` before NOW and untouched since (store/d1/fresh.ts). */
async function strandedFor(ref: { source: string; id: string }, ms: number): Promise<void> {
  await recordDelivery({ ...ref, eventType: "test.event", body: new TextEncoder().encode("{}"), receivedAtMs: NOW - ms });
}
const alarmOf = (stub: DurableObjectStub) => runInDurableObject(stub, (_instance, ctx) => ctx.storage.getAlarm());
/** The test config's heartbeat interval (test/vitest.config.ts may set one). */
const intervalMs = () => loadConfig(env).sweepIntervalSeconds * 1000;

describe("the sweeper", () => {
  it("re-enqueues a delivery stored but never enqueued, once", async () => {
    await strandedFor({ source: "sweep", id: "stranded" }, 5 * MINUTE);
    await storeDelivery({ source: "sweep", id: "fresh" });
    const queue = recordingQueue(env.DELIVERIES);
    const report = await sweep({ ...env, DELIVERIES: queue.producer }, NOW);
    expect(report.requeued).toBe(1);
    expect(queue.sent).toEqual([{ source: "sweep", id: "stranded" }]);
    // Touched, so the next run does not send it again while it waits in the queue.
    const again = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: again.producer }, NOW);
    expect(again.sent).toEqual([]);
  });

  it("re-enqueues a processing delivery whose lease expired long ago, not a recent one", async () => {
    await storeDelivery({ source: "sweep", id: "stuck" });
    await storeDelivery({ source: "sweep", id: "working" });
    // As a recorded takeover leaves them: `processing` under its lease token.
    await age("sweep", "stuck", { status: "processing", attempts: 1, lease_token: 1, updated_at: iso(NOW - 10 * MINUTE) });
    await age("sweep", "working", { status: "processing", attempts: 1, lease_token: 1, updated_at: iso(NOW - 30_000) });
    const queue = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: queue.producer }, NOW);
    expect(queue.sent).toEqual([{ source: "sweep", id: "stuck" }]);
  });

  it("leaves a delivery waiting for its backoff retry alone until the backoff is long past", async () => {
    await storeDelivery({ source: "sweep", id: "backoff" });
    // Failed its 2nd attempt 400 s ago: still inside 60 s + the longest wait for a retry + 60 s
    // lease, the wait being the longest Retry-After honoured (300 s; the longest backoff is 16 s).
    await age("sweep", "backoff", { attempts: 2, lease_token: 1, received_at: iso(NOW - 500_000), updated_at: iso(NOW - 400_000) });
    const early = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: early.producer }, NOW);
    expect(early.sent).toEqual([]);
    const late = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: late.producer }, NOW + 30_000);
    expect(late.sent).toContainEqual({ source: "sweep", id: "backoff" });
  });

  it("deletes rows past RETENTION_DAYS and clears bodies of done rows past BODY_RETENTION_DAYS", async () => {
    for (const id of ["ancient", "old-done", "old-failed", "new-done"]) await storeDelivery({ source: "retention", id }, { secret: "pii" });
    await age("retention", "ancient", { status: "done", received_at: iso(NOW - 31 * DAY) });
    await age("retention", "old-done", { status: "done", received_at: iso(NOW - 8 * DAY) });
    await age("retention", "old-failed", { status: "failed", received_at: iso(NOW - 8 * DAY) });
    await age("retention", "new-done", { status: "done" });
    const report = await sweep(env, NOW);
    expect(report.deleted).toBe(1);
    expect(report.bodiesCleared).toBe(1);
    expect(await deliveryRow("retention", "ancient")).toBeNull();
    expect((await deliveryRow("retention", "old-done"))!.body).toBeNull();
    // A failed delivery keeps its body: it may still be replayed.
    expect((await deliveryRow("retention", "old-failed"))!.body).not.toBeNull();
    expect((await deliveryRow("retention", "new-done"))!.body).not.toBeNull();
  });

  it("sweeps with the largest values the config accepts (the look-backs stay within Date's range)", async () => {
    const extreme = { ...env, MAX_ATTEMPTS: "17", RETRY_BASE_SECONDS: "1", SWEEP_AFTER_SECONDS: "86400", LEASE_SECONDS: "900", RETENTION_DAYS: "3650", BODY_RETENTION_DAYS: "3650" };
    await expect(sweep(extreme, NOW)).resolves.toMatchObject({ requeued: expect.any(Number) });
  });
});

describe("the cron trigger", () => {
  it("sweeps at its scheduled time", async () => {
    await strandedFor({ source: "cron", id: "via-cron" }, 5 * MINUTE);
    const scheduledTime = NOW - 1_000;
    await worker.scheduled(createScheduledController({ scheduledTime, cron: "* * * * *" }), env);
    // The sweep touched it, at the scheduled time, when it re-enqueued it.
    expect((await deliveryRow("cron", "via-cron"))!.updated_at).toBe(iso(scheduledTime));
  });

  it("reports its sweep to the Sweeper, which arms the heartbeat to watch over it", async () => {
    const sweeper = sweeperFor(env);
    await runInDurableObject(sweeper, (_instance, ctx) => ctx.storage.deleteAll());
    await worker.scheduled(createScheduledController({ scheduledTime: NOW, cron: "* * * * *" }), env);
    expect(await runInDurableObject(sweeper, (_instance, ctx) => ctx.storage.get("lastCronSweepMs"))).toBe(NOW);
    expect(await alarmOf(sweeper)).toBe(NOW + intervalMs());
  });

  it("skips the sweep and does not throw while the configuration is invalid", async () => {
    await strandedFor({ source: "cron", id: "bad-config" }, 5 * MINUTE);
    const bad = { ...env, MAX_ATTEMPTS: "many" };
    await worker.scheduled(createScheduledController({ scheduledTime: NOW, cron: "* * * * *" }), bad);
    expect((await deliveryRow("cron", "bad-config"))!.updated_at).toBe(iso(NOW - 5 * MINUTE));
  });
});

describe("the heartbeat", () => {
  it("is armed after a delivery or a batch with no SWEEP_INTERVAL_SECONDS set", async () => {
    const sweeper = sweeperFor(env);
    await runInDurableObject(sweeper, (_instance, ctx) => ctx.storage.deleteAll());
    const { SWEEP_INTERVAL_SECONDS: _unset, ...secretsOnly } = env as Env & { SWEEP_INTERVAL_SECONDS?: string };
    await ensureSweepHeartbeat(secretsOnly as Env);
    // The object arms itself from its own env (the test config's, or the default).
    expect(await alarmOf(sweeper)).toBe(NOW + intervalMs());
  });

  it("is armed again by a later check when its alarm died, though not on every request", async () => {
    const sweeper = sweeperFor(env);
    const later = NOW + 1_000 * HEARTBEAT_CHECK_MS; // past any check made by the tests before
    vi.setSystemTime(later);
    await runInDurableObject(sweeper, (_instance, ctx) => ctx.storage.deleteAll());
    await ensureSweepHeartbeat(env);
    expect(await alarmOf(sweeper)).toBe(later + intervalMs());
    // The alarm dies (its platform retries used up).
    await runInDurableObject(sweeper, (_instance, ctx) => ctx.storage.deleteAlarm());
    await ensureSweepHeartbeat(env);
    expect(await alarmOf(sweeper)).toBeNull(); // checked a moment ago: no call per request
    vi.setSystemTime(later + HEARTBEAT_CHECK_MS);
    await ensureSweepHeartbeat(env);
    expect(await alarmOf(sweeper)).toBe(later + HEARTBEAT_CHECK_MS + intervalMs());
  });

  it("sweeps when no cron sweep was reported, and re-arms one interval ahead", async () => {
    const sweeper = env.SWEEPER.get(env.SWEEPER.idFromName("heartbeat-no-cron"));
    await runInDurableObject(sweeper, (_instance, ctx) => ctx.storage.setAlarm(NOW));
    await strandedFor({ source: "beat", id: "no-cron" }, 5 * MINUTE);
    expect(await runDurableObjectAlarm(sweeper)).toBe(true);
    expect((await deliveryRow("beat", "no-cron"))!.updated_at).toBe(iso(NOW));
    expect(await alarmOf(sweeper)).toBe(NOW + intervalMs());
  });

  it("only re-arms, a minute ahead, after a recent cron sweep", async () => {
    const sweeper = env.SWEEPER.get(env.SWEEPER.idFromName("heartbeat-cron-alive"));
    await sweeper.noteCronSweep();
    await strandedFor({ source: "beat", id: "cron-alive" }, 5 * MINUTE);
    vi.setSystemTime(NOW + CRON_ALIVE_MS - 1_000);
    expect(await runDurableObjectAlarm(sweeper)).toBe(true);
    expect((await deliveryRow("beat", "cron-alive"))!.updated_at).toBe(iso(NOW - 5 * MINUTE));
    expect(await alarmOf(sweeper)).toBe(NOW + CRON_ALIVE_MS - 1_000 + WATCH_INTERVAL_MS);
  });

  it("sweeps again once the cron has gone quiet for CRON_ALIVE_MS", async () => {
    const sweeper = env.SWEEPER.get(env.SWEEPER.idFromName("heartbeat-cron-gone"));
    await sweeper.noteCronSweep();
    await strandedFor({ source: "beat", id: "cron-gone" }, 5 * MINUTE);
    vi.setSystemTime(NOW + CRON_ALIVE_MS);
    expect(await runDurableObjectAlarm(sweeper)).toBe(true);
    expect((await deliveryRow("beat", "cron-gone"))!.updated_at).toBe(iso(NOW + CRON_ALIVE_MS));
  });

  it("re-arms instead of dying while the configuration is invalid", async () => {
    const sweeper = env.SWEEPER.get(env.SWEEPER.idFromName("heartbeat-bad-config"));
    const original = await runInDurableObject(sweeper, async (instance, ctx) => {
      await ctx.storage.setAlarm(NOW);
      // The object's own env, as if its deploy had a typo.
      const holder = instance as unknown as { env: Env };
      const own = holder.env;
      holder.env = { ...own, RETENTION_DAYS: "thirty" };
      return own;
    });
    try {
      expect(await runDurableObjectAlarm(sweeper)).toBe(true);
      expect(await alarmOf(sweeper)).toBe(NOW + CONFIG_RETRY_MS);
    } finally {
      await runInDurableObject(sweeper, (instance) => {
        (instance as unknown as { env: Env }).env = original;
      });
    }
  });
});

describe("planBeat", () => {
  it("sweeps with no cron sweep seen, and watches at no less than a minute while the cron is alive", () => {
    expect(planBeat(NOW, 20_000, undefined)).toEqual({ sweep: true, nextAlarmMs: NOW + 20_000 });
    expect(planBeat(NOW, 20_000, NOW - CRON_ALIVE_MS)).toEqual({ sweep: true, nextAlarmMs: NOW + 20_000 });
    expect(planBeat(NOW, 20_000, NOW - 30_000)).toEqual({ sweep: false, nextAlarmMs: NOW + WATCH_INTERVAL_MS });
    expect(planBeat(NOW, 300_000, NOW - 30_000)).toEqual({ sweep: false, nextAlarmMs: NOW + 300_000 });
  });
});

describe("body pruning with BODY_RETENTION_DAYS = 0", () => {
  it("clears the body of a delivery whose insert was in flight when a sweep ran: the watermark never passes it", async () => {
    const zero = { ...env, BODY_RETENTION_DAYS: "0" };
    // The earlier tests' unfinished deliveries would hold the watermark back (it never passes one).
    await exec(sql`UPDATE deliveries SET status = 'done' WHERE status IN ('received', 'processing')`);
    await storeDelivery({ source: "prune-zero", id: "newer" }, { secret: "pii" });
    await age("prune-zero", "newer", { status: "done", received_at: iso(NOW - 1_000) });
    await sweep(zero, NOW);
    // Too fresh to prune yet: a delivery received before it may still be on its way to the store.
    expect((await deliveryRow("prune-zero", "newer"))!.body).not.toBeNull();
    // That one: received (its received_at taken) before the sweep, written after it, then done.
    await storeDelivery({ source: "prune-zero", id: "in-flight" }, { secret: "pii" });
    await age("prune-zero", "in-flight", { status: "done", received_at: iso(NOW - 2_000) });
    const later = NOW + BODY_PRUNING_MIN_AGE_MS + MINUTE;
    vi.setSystemTime(later);
    const report = await sweep(zero, later);
    expect(report.bodiesCleared).toBeGreaterThanOrEqual(2);
    expect((await deliveryRow("prune-zero", "newer"))!.body).toBeNull();
    expect((await deliveryRow("prune-zero", "in-flight"))!.body).toBeNull();
  });
});
