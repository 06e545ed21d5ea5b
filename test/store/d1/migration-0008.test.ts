/**
 * migrations/0008 on an inbox that already holds deliveries: its seed counts them once, up to a
 * mark two minutes back, so that the overview is right at once and does not count the table on
 * every refresh while the sweeper's walk would catch up. (The setup applied every migration to an
 * empty database; this re-runs the seed's statements on one with rows.)
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { deliveryStats } from "../../../src/store/d1/admin";
import { markDone, recordResult } from "../../../src/store/d1/lifecycle";
import { refreshOverview } from "../../../src/store/d1/overview";
import { insertDelivery } from "../../../src/store/d1/record";

it("counts the deliveries stored before it, unhandled ones included", async () => {
  const now = Date.now();
  const body = new TextEncoder().encode("{}");
  for (const [index, fate] of ["done", "unhandled", "unhandled", "failed", "received"].entries()) {
    const ref = { source: index % 2 === 0 ? "old-a" : "old-b", id: `m-${index}` };
    await insertDelivery(env.DB, { ...ref, eventType: null, body, receivedAtMs: now - 3_600_000 + index }).run();
    if (fate === "done" || fate === "unhandled") await markDone(env.DB, ref, now, fate === "done", now).run();
    if (fate === "failed") await recordResult(env.DB, ref, now, { kind: "failed", error: "boom" }, now);
  }
  // As before 0008: no counts, no mark.
  await env.DB.batch([env.DB.prepare("DELETE FROM inbox_counts"), env.DB.prepare("DELETE FROM inbox_hours"), env.DB.prepare("DELETE FROM inbox_marks")]);
  const seed = env.TEST_MIGRATIONS.find((migration) => migration.name.startsWith("0008_"))!.queries.filter((query) => /^\s*(--[^\n]*\n\s*)*INSERT INTO inbox_/.test(query));
  expect(seed).toHaveLength(3);
  for (const query of seed) await env.DB.prepare(query).run();

  const mark = await env.DB.prepare("SELECT value FROM inbox_marks WHERE name = 'counted_through'").first<{ value: string }>();
  expect(Date.parse(mark!.value)).toBeGreaterThan(now - 3 * 60_000);
  const overview = await refreshOverview(env.DB, now);
  const exact = await deliveryStats(env.DB, now);
  expect({ counts: overview.counts, bySource: overview.bySource, unhandled: overview.unhandled }).toEqual({ counts: exact.counts, bySource: exact.bySource, unhandled: exact.unhandled });
  expect(overview.unhandled).toBe(2);
  expect(overview.last24h.received).toBe(5);
});
