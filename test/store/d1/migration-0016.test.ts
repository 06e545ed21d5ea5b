/**
 * migrations/0016 on an inbox that already holds unfinished deliveries: every one of them, touched
 * or not, goes into the waiting index, and the walk of untouched rows starts at the overview's
 * count, so that none is lost to the sweeper or to the backlog's numbers. (The setup applied every
 * migration to an empty database; this re-runs its data statements on one with rows, as 0006 and
 * earlier left them: untouched rows with no lease token.)
 */
import { env } from "cloudflare:workers";
import { expect, it } from "vitest";
import { deliveryStats } from "../../../src/store/d1/admin";
import { takeStranded } from "../../../src/store/d1/sweep";
import { insertDelivery } from "../../../src/store/d1/record";

it("puts the unfinished rows stored before it in the waiting index and starts the walk at the count", async () => {
  const now = Date.parse("2036-01-01T00:00:00.000Z");
  const body = new TextEncoder().encode("{}");
  for (const [index, status] of ["received", "processing", "done"].entries()) {
    await insertDelivery(env.DB, { source: "before-0016", id: `m-${index}`, eventType: null, body, receivedAtMs: now - 3_600_000 + index }).run();
    await env.DB.prepare("UPDATE deliveries SET status = ?1, updated_at = ?2 WHERE id = ?3").bind(status, new Date(now - 3_600_000).toISOString(), `m-${index}`).run();
  }
  // The count's mark already past them, as on an inbox that has run a while.
  const counted = new Date(now - 120_000).toISOString();
  await env.DB.batch([
    env.DB.prepare("DELETE FROM inbox_marks"),
    env.DB.prepare("INSERT INTO inbox_marks (name, value) VALUES ('counted_through', ?1)").bind(counted),
  ]);
  const data = env.TEST_MIGRATIONS.find((migration) => migration.name.startsWith("0016_"))!.queries.filter((query) => /^\s*(--[^\n]*\n\s*)*(UPDATE|INSERT)/.test(query));
  expect(data).toHaveLength(2);
  for (const query of data) await env.DB.prepare(query).run();

  const waiting = await env.DB.prepare("SELECT id FROM deliveries INDEXED BY deliveries_waiting WHERE status IN ('received', 'processing') AND lease_token IS NOT NULL ORDER BY id").all();
  expect(waiting.results).toEqual([{ id: "m-0" }, { id: "m-1" }]);
  expect(await env.DB.prepare("SELECT value FROM inbox_marks WHERE name = 'fresh_from'").first()).toEqual({ value: counted });
  expect((await deliveryStats(env.DB, now)).oldestWaitingSeconds).toBe(3600);
  // Both are found stranded: the received one by the waiting index's rule for a never-attempted delivery.
  const cutoffs = { neverAttemptedBeforeMs: now - 60_000, retryWaitingBeforeMs: now - 60_000, processingBeforeMs: now - 60_000 };
  const taken = await takeStranded(env.DB, cutoffs, now, 10);
  expect(taken.map((ref) => ref.id).sort()).toEqual(["m-0", "m-1"]);
});
