/**
 * Replays from the dashboard: one failed delivery, a done one forced behind a confirmation, and
 * failed ones in bulk by the list's filters, in bounded batches, never more than confirmed. They go
 * through the admin API's replay (src/processing/replay.ts); the queue here only records what was sent.
 */
import { describe, expect, it } from "vitest";
import { BULK_BATCH } from "../../../src/http/ui/routes/replay";
import { sql } from "../../../src/sql";
import { deliveryRow, exec } from "../../helpers/store-db";
import { recordingProducer } from "../../helpers/recording-producer";
import { ui } from "./client";
import { putDelivery } from "./fixtures";

describe("POST /ui/deliveries/:source/:id/replay", () => {
  it("replays a failed delivery and goes back to its page, which says so", async () => {
    await putDelivery({ source: "ui-replay", id: "failed", status: "failed", attempts: 5, error: "boom" });
    const queue = recordingQueue();
    const result = await ui("/ui/deliveries/ui-replay/failed/replay", { form: {}, env: queue.env });
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui/deliveries/ui-replay/failed?notice=replayed");
    expect(queue.sent).toEqual([{ source: "ui-replay", id: "failed" }]);
    expect(await deliveryRow("ui-replay", "failed")).toMatchObject({ status: "received", attempts: 0, error: null });
    const page = await ui(result.headers.get("location")!);
    expect(page.text).toContain("Replayed: the delivery is back in the queue");
    // The replay is in the attempt history.
    expect(page.text).toContain('<span class="badge badge-received">replayed</span>');
  });

  it("refuses a done delivery without force, and says to force it", async () => {
    await putDelivery({ source: "ui-replay", id: "done", status: "done", attempts: 1 });
    const queue = recordingQueue();
    const result = await ui("/ui/deliveries/ui-replay/done/replay", { form: {}, env: queue.env });
    expect(result.headers.get("location")).toBe("/ui/deliveries/ui-replay/done?notice=done");
    expect(queue.sent).toEqual([]);
    expect((await deliveryRow("ui-replay", "done"))?.status).toBe("done");
    expect((await ui(result.headers.get("location")!)).text).toContain("Use Force replay to run its handler again.");
  });

  it("replays a done delivery with force=true, as the confirmation page sends it", async () => {
    await putDelivery({ source: "ui-replay", id: "forced", status: "done", attempts: 1 });
    const confirm = await ui("/ui/deliveries/ui-replay/forced/replay");
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain("Run this delivery&#39;s handler again?");
    expect(confirm.text).toContain('<input type="hidden" name="force" value="true"/>');
    const queue = recordingQueue();
    const result = await ui("/ui/deliveries/ui-replay/forced/replay", { form: { force: "true" }, env: queue.env });
    expect(result.headers.get("location")).toBe("/ui/deliveries/ui-replay/forced?notice=replayed");
    expect(queue.sent).toEqual([{ source: "ui-replay", id: "forced" }]);
  });

  it("refuses a delivery in flight, and one whose body retention cleared", async () => {
    await putDelivery({ source: "ui-replay", id: "busy", status: "processing" });
    await putDelivery({ source: "ui-replay", id: "pruned", status: "failed", body: null });
    const queue = recordingQueue();
    expect((await ui("/ui/deliveries/ui-replay/busy/replay", { form: { force: "true" }, env: queue.env })).headers.get("location")).toBe(
      "/ui/deliveries/ui-replay/busy?notice=in-flight",
    );
    expect((await ui("/ui/deliveries/ui-replay/pruned/replay", { form: {}, env: queue.env })).headers.get("location")).toBe(
      "/ui/deliveries/ui-replay/pruned?notice=body-pruned",
    );
    expect(queue.sent).toEqual([]);
  });

  it("shows no confirmation page for a delivery that is not done: back to its page", async () => {
    await putDelivery({ source: "ui-replay", id: "waiting", status: "received" });
    const result = await ui("/ui/deliveries/ui-replay/waiting/replay");
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui/deliveries/ui-replay/waiting");
  });

  it("shows no text of an unknown notice code", async () => {
    await putDelivery({ source: "ui-replay", id: "notice" });
    const page = await ui("/ui/deliveries/ui-replay/notice?notice=%3Cscript%3E");
    expect(page.text).not.toContain("script%3E");
    expect(page.text).not.toContain('class="notice');
  });
});

describe("bulk replay of failed deliveries", () => {
  it("confirms how many match the filters before replaying anything", async () => {
    for (let index = 0; index < 3; index++) await putDelivery({ source: "ui-bulk-a", id: `a-${index}`, status: "failed", error: "boom" });
    await putDelivery({ source: "ui-bulk-a", id: "other-type", status: "failed", error: "boom", eventType: "other.type" });
    await putDelivery({ source: "ui-bulk-a", id: "done", status: "done" });
    const page = await ui("/ui/replay?source=ui-bulk-a&eventType=test.event");
    expect(page.status).toBe(200);
    expect(page.text).toContain("3 failed deliveries of the source ui-bulk-a, of the event type test.event can be replayed now.");
    expect(page.text).toContain('<button type="submit">Replay 3</button>');
    expect((await deliveryRow("ui-bulk-a", "a-0"))?.status).toBe("failed");
  });

  it("replays in batches of at most 100, confirming each, never more than confirmed", async () => {
    for (let index = 0; index < BULK_BATCH + 5; index++) await putDelivery({ source: "ui-bulk-b", id: `b-${index}`, status: "failed", error: "boom" });
    const confirm = await ui("/ui/replay?source=ui-bulk-b");
    expect(confirm.text).toContain(`<button type="submit">Replay the first ${BULK_BATCH} of ${BULK_BATCH + 5}</button>`);
    expect(confirm.text).toContain(`<input type="hidden" name="left" value="${BULK_BATCH + 5}"/>`);

    const queue = recordingQueue();
    const first = await ui("/ui/replay", { form: { source: "ui-bulk-b", left: String(BULK_BATCH + 5), replayed: "0" }, env: queue.env });
    expect(first.status).toBe(303);
    expect(first.headers.get("location")).toBe(`/ui/replay?source=ui-bulk-b&replayed=${BULK_BATCH}&left=5`);
    expect(queue.sent).toHaveLength(BULK_BATCH);

    const progress = await ui(first.headers.get("location")!);
    expect(progress.text).toContain(`Replayed ${BULK_BATCH} so far. 5 of those you confirmed are left.`);
    expect(progress.text).toContain('<button type="submit">Replay the next 5</button>');

    const second = await ui("/ui/replay", { form: { source: "ui-bulk-b", left: "5", replayed: String(BULK_BATCH) }, env: queue.env });
    expect(second.headers.get("location")).toBe(`/ui/replay?source=ui-bulk-b&replayed=${BULK_BATCH + 5}&left=0`);
    expect(new Set(queue.sent.map((message) => (message as { id: string }).id)).size).toBe(BULK_BATCH + 5);

    // One fails again at once: the run is over, it is not taken a second time.
    await exec(sql`UPDATE deliveries SET status = 'failed', error = 'again' WHERE source = 'ui-bulk-b' AND id = 'b-0'`);
    const done = await ui(second.headers.get("location")!);
    expect(done.text).toContain("Done: every delivery you confirmed was replayed.");
    // What is known is that they were put back, not how their runs end.
    expect(done.text).toContain("their results pending: the failed list shows any that fail again");
    expect(done.text).toContain("1 failed delivery of the source ui-bulk-b can be replayed now.");
    expect(done.text).not.toContain('action="/ui/replay"');
    const again = await ui("/ui/replay", { form: { source: "ui-bulk-b", left: "0", replayed: String(BULK_BATCH + 5) }, env: queue.env });
    expect(again.headers.get("location")).toBe(`/ui/replay?source=ui-bulk-b&replayed=${BULK_BATCH + 5}&left=0`);
    expect(queue.sent).toHaveLength(BULK_BATCH + 5);
    expect((await deliveryRow("ui-bulk-b", "b-0"))?.status).toBe("failed");
  });

  it("replays one subscriber's failures alone, and lists them by subscriber", async () => {
    for (const [id, subscriber] of [["s-1", "crm"], ["s-2", "crm"], ["s-3", "ledger"]] as const) {
      await putDelivery({ source: "ui-bulk-sub", id, status: "failed", error: `${subscriber} said no` });
      await exec(sql`UPDATE deliveries SET subscriber = ${subscriber} WHERE source = 'ui-bulk-sub' AND id = ${id}`);
    }
    const listed = await ui("/ui/deliveries?source=ui-bulk-sub&subscriber=crm&status=failed");
    expect(listed.status).toBe(200);
    expect(listed.text).toContain('value="crm"');
    for (const id of ["s-1", "s-2"]) expect(listed.text).toContain(`/ui/deliveries/ui-bulk-sub/${id}`);
    expect(listed.text).not.toContain("/ui/deliveries/ui-bulk-sub/s-3");
    expect(listed.text).toContain('href="/ui/replay?source=ui-bulk-sub&amp;subscriber=crm"');

    const confirm = await ui("/ui/replay?source=ui-bulk-sub&subscriber=crm");
    expect(confirm.text).toContain("2 failed deliveries of the source ui-bulk-sub, that failed for the subscriber crm can be replayed now.");
    expect(confirm.text).toContain('<input type="hidden" name="subscriber" value="crm"/>');
    const queue = recordingQueue();
    const replayed = await ui("/ui/replay", { form: { source: "ui-bulk-sub", subscriber: "crm", left: "2", replayed: "0" }, env: queue.env });
    expect(replayed.headers.get("location")).toBe("/ui/replay?source=ui-bulk-sub&subscriber=crm&replayed=2&left=0");
    expect(queue.sent.map((message) => (message as { id: string }).id).sort()).toEqual(["s-1", "s-2"]);
    expect((await deliveryRow("ui-bulk-sub", "s-3"))?.status).toBe("failed");

    const bad = await ui("/ui/deliveries?subscriber=Not%20A%20Name");
    expect(bad.text).toContain("subscriber: not a subscriber&#39;s name");
  });

  it("replays nothing for a filter it cannot read", async () => {
    await putDelivery({ source: "ui-bulk-c", id: "c-1", status: "failed", error: "boom" });
    const queue = recordingQueue();
    const result = await ui("/ui/replay", { form: { source: "ui-bulk-c", since: "not a time", left: "1" }, env: queue.env });
    expect(result.headers.get("location")).toContain("left=0");
    expect(queue.sent).toEqual([]);
    expect((await deliveryRow("ui-bulk-c", "c-1"))?.status).toBe("failed");
  });

  it("offers no replay form while a filter could not be read (the form would replay a wider set)", async () => {
    await putDelivery({ source: "ui-bulk-p", id: "p-1", status: "failed", error: "boom" });
    const page = await ui("/ui/replay?source=ui-bulk-p&since=garbage");
    expect(page.status).toBe(200);
    expect(page.text).toContain("Fix the filters first");
    expect(page.text).not.toContain('action="/ui/replay"');
    expect((await ui("/ui/replay?source=ui-bulk-p")).text).toContain('action="/ui/replay"');
  });

  it("says there is nothing to replay when no failed delivery matches", async () => {
    const page = await ui("/ui/replay?source=ui-bulk-none");
    expect(page.text).toContain("No failed delivery of the source ui-bulk-none can be replayed now.");
    expect(page.text).not.toContain('action="/ui/replay"');
  });
});

/** A recording queue as the dashboard's calls take it: the bindings to override. */
function recordingQueue() {
  const { sent, queue } = recordingProducer();
  return { sent, env: { DELIVERIES: queue } };
}
