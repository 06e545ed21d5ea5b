import { createScheduledController, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { sweep } from "../../src/processing/sweeper";
import { deliveryRow } from "../helpers/db";
import { recordingQueue, storeDelivery } from "../helpers/processing";

const MINUTE = 60_000;
const DAY = 86_400_000;

async function age(source: string, id: string, fields: Record<string, unknown>): Promise<void> {
  const columns = Object.keys(fields);
  await env.DB.prepare(`UPDATE deliveries SET ${columns.map((column, index) => `${column} = ?${index + 3}`).join(", ")} WHERE source = ?1 AND id = ?2`)
    .bind(source, id, ...Object.values(fields))
    .run();
}

describe("the sweeper", () => {
  it("re-enqueues a delivery stored but never enqueued, once", async () => {
    await storeDelivery({ source: "sweep", id: "stranded" });
    await storeDelivery({ source: "sweep", id: "fresh" });
    await age("sweep", "stranded", { updated_at: new Date(Date.now() - 5 * MINUTE).toISOString() });
    const queue = recordingQueue(env.DELIVERIES);
    const report = await sweep({ ...env, DELIVERIES: queue.producer }, Date.now());
    expect(report.requeued).toBe(1);
    expect(queue.sent).toEqual([{ source: "sweep", id: "stranded" }]);
    // Touched, so the next run does not send it again while it waits in the queue.
    const again = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: again.producer }, Date.now());
    expect(again.sent).toEqual([]);
  });

  it("re-enqueues a processing delivery whose lease expired long ago, not a recent one", async () => {
    await storeDelivery({ source: "sweep", id: "stuck" });
    await storeDelivery({ source: "sweep", id: "working" });
    await age("sweep", "stuck", { status: "processing", attempts: 1, updated_at: new Date(Date.now() - 10 * MINUTE).toISOString() });
    await age("sweep", "working", { status: "processing", attempts: 1, updated_at: new Date(Date.now() - 30_000).toISOString() });
    const queue = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: queue.producer }, Date.now());
    expect(queue.sent).toEqual([{ source: "sweep", id: "stuck" }]);
  });

  it("leaves a delivery waiting for its backoff retry alone until the backoff is long past", async () => {
    await storeDelivery({ source: "sweep", id: "backoff" });
    // Failed its 2nd attempt 90 s ago: still inside 60 s + 16 s longest backoff + 60 s lease.
    await age("sweep", "backoff", { attempts: 2, updated_at: new Date(Date.now() - 90_000).toISOString() });
    const early = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: early.producer }, Date.now());
    expect(early.sent).toEqual([]);
    const late = recordingQueue(env.DELIVERIES);
    await sweep({ ...env, DELIVERIES: late.producer }, Date.now() + 60_000);
    expect(late.sent).toContainEqual({ source: "sweep", id: "backoff" });
  });

  it("deletes rows past RETENTION_DAYS and clears bodies of done rows past BODY_RETENTION_DAYS", async () => {
    for (const id of ["ancient", "old-done", "old-failed", "new-done"]) await storeDelivery({ source: "retention", id }, { secret: "pii" });
    await age("retention", "ancient", { status: "done", received_at: new Date(Date.now() - 31 * DAY).toISOString() });
    await age("retention", "old-done", { status: "done", received_at: new Date(Date.now() - 8 * DAY).toISOString() });
    await age("retention", "old-failed", { status: "failed", received_at: new Date(Date.now() - 8 * DAY).toISOString() });
    await age("retention", "new-done", { status: "done" });
    const report = await sweep(env, Date.now());
    expect(report.deleted).toBe(1);
    expect(report.bodiesCleared).toBe(1);
    expect(await deliveryRow("retention", "ancient")).toBeNull();
    expect((await deliveryRow("retention", "old-done"))!.body).toBeNull();
    // A failed delivery keeps its body: it may still be replayed.
    expect((await deliveryRow("retention", "old-failed"))!.body).not.toBeNull();
    expect((await deliveryRow("retention", "new-done"))!.body).not.toBeNull();
  });

  it("runs from the cron trigger", async () => {
    await storeDelivery({ source: "sweep", id: "via-cron" });
    await age("sweep", "via-cron", { updated_at: new Date(Date.now() - 5 * MINUTE).toISOString() });
    const controller = createScheduledController({ scheduledTime: Date.now(), cron: "* * * * *" });
    await worker.scheduled(controller, env);
    const row = await deliveryRow("sweep", "via-cron");
    // The sweep touched it when it re-enqueued it.
    expect(Date.parse(row!.updated_at)).toBeGreaterThan(Date.now() - MINUTE);
  });

  it("runs from the heartbeat alarm and re-arms it every SWEEP_INTERVAL_SECONDS", async () => {
    const sweeper = env.SWEEPER.get(env.SWEEPER.idFromName("test-heartbeat"));
    await runInDurableObject(sweeper, async (_instance, ctx) => ctx.storage.setAlarm(Date.now() + 1_000));
    await storeDelivery({ source: "sweep", id: "via-alarm" });
    await age("sweep", "via-alarm", { updated_at: new Date(Date.now() - 5 * MINUTE).toISOString() });
    expect(await runDurableObjectAlarm(sweeper)).toBe(true);
    expect(Date.parse((await deliveryRow("sweep", "via-alarm"))!.updated_at)).toBeGreaterThan(Date.now() - MINUTE);
    // The test env sets 30 s: the next beat is about 30 s away.
    const next = await runInDurableObject(sweeper, (_instance, ctx) => ctx.storage.getAlarm());
    expect(next).toBeGreaterThan(Date.now() + 25_000);
    expect(next).toBeLessThanOrEqual(Date.now() + 30_000);
  });
});
