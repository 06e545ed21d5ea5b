/**
 * `GET /ui`: the overview's numbers, each a link to the list it counts, the chart and its text
 * equivalent. It reads the store's snapshot (at most a minute old by design), so each test
 * drops the snapshot first: the page's read then puts a fresh one together.
 */
import { describe, expect, it } from "vitest";
import { sql } from "../../src/sql";
import { OVERVIEW_MARK } from "../../src/store/snapshot";
import { exec } from "../helpers/store-db";
import { ui } from "./client";
import { putDelivery } from "./fixtures";

/** Drops the stored snapshot (either store keeps it in inbox_marks): the next read puts it together afresh. */
async function dropSnapshot(): Promise<void> {
  await exec(sql`DELETE FROM inbox_marks WHERE name = ${OVERVIEW_MARK}`);
}

/** `href` of the link whose accessible name is `label`. */
function linkTo(html: string, label: string): string | undefined {
  const escaped = label.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`<a href="([^"]+)" aria-label="${escaped}">`).exec(html)?.[1]?.replaceAll("&amp;", "&");
}

describe("GET /ui", () => {
  it("shows the counts by source and status, each linked to the matching list", async () => {
    await putDelivery({ source: "ui-ov", id: "d1", status: "done", attempts: 1 });
    await putDelivery({ source: "ui-ov", id: "d2", status: "done", attempts: 1 });
    await putDelivery({ source: "ui-ov", id: "f1", status: "failed", attempts: 5, error: "boom" });
    await putDelivery({ source: "ui-ov", id: "r1", status: "received" });
    await dropSnapshot();
    const page = await ui("/ui");
    expect(page.status).toBe(200);
    expect(page.headers.get("cache-control")).toBe("no-store");
    expect(linkTo(page.text, "2 done deliveries of ui-ov")).toBe("/ui/deliveries?status=done&source=ui-ov");
    expect(linkTo(page.text, "1 failed deliveries of ui-ov")).toBe("/ui/deliveries?status=failed&source=ui-ov");
    expect(linkTo(page.text, "1 received deliveries of ui-ov")).toBe("/ui/deliveries?status=received&source=ui-ov");
    expect(linkTo(page.text, "0 processing deliveries of ui-ov")).toBe("/ui/deliveries?status=processing&source=ui-ov");
    expect(linkTo(page.text, "4 deliveries of ui-ov")).toBe("/ui/deliveries?source=ui-ov");
    // The totals by status link to the status alone.
    expect(page.text).toMatch(/<a href="\/ui\/deliveries\?status=failed" aria-label="\d+ failed deliveries">\d+<\/a>/);
    // The unhandled count links to the unhandled ones.
    expect(page.text).toMatch(/<a href="\/ui\/deliveries\?unhandled=1" aria-label="\d+ unhandled deliveries">\d+<\/a>/);
    // Tables have header cells with scope.
    expect(page.text).toContain('<th scope="row">ui-ov</th>');
    expect(page.text).toContain('<th scope="col">Source</th>');
  });

  it("shows the oldest waiting delivery's age, linked to the waiting list ending at it", async () => {
    await putDelivery({ source: "ui-ov-wait", id: "w1", status: "received", receivedAtMs: Date.now() - 3_600_000 * 30 });
    await dropSnapshot();
    const page = await ui("/ui");
    const oldest = /<span class="label">Oldest waiting<\/span><span class="value"><a href="([^"]+)">(\d+ [a-z]+)<\/a>/.exec(page.text);
    expect(oldest?.[2]).toBe("1 d");
    const url = new URL(oldest![1]!.replaceAll("&amp;", "&"), "https://x");
    expect(url.pathname).toBe("/ui/deliveries");
    expect(url.searchParams.get("status")).toBe("received");
    // The link ends just after the oldest delivery, so it is on the list.
    const list = await ui(`${url.pathname}${url.search}`);
    expect(list.text).toContain('href="/ui/deliveries/ui-ov-wait/w1"');
  });

  it("shows the last 24 hours as a chart with a name and a summary, and as a table of links", async () => {
    await putDelivery({ source: "ui-ov-day", id: "h1", status: "failed", error: "boom" });
    await putDelivery({ source: "ui-ov-day", id: "h2", status: "done" });
    const now = Date.now();
    await dropSnapshot();
    const page = await ui("/ui");
    expect(page.text).toMatch(/<svg class="chart" viewBox="0 0 \d+ \d+" role="img" aria-labelledby="chart-title chart-summary">/);
    expect(page.text).toContain('<title id="chart-title">Received and failed deliveries per hour, last 24 hours (UTC)</title>');
    expect(page.text).toMatch(/<desc id="chart-summary">\d+ received and \d+ failed in the last 24 hours/);
    const table = /<caption>Deliveries received per hour[\s\S]*?<\/table>/.exec(page.text)?.[0] ?? "";
    expect([...table.matchAll(/<th scope="row">/g)]).toHaveLength(24);
    // The current hour's row links to that hour's deliveries, and to its failed ones.
    const hour = new Date(Math.floor(now / 3_600_000) * 3_600_000).toISOString();
    const next = new Date(Math.floor(now / 3_600_000) * 3_600_000 + 3_600_000).toISOString();
    const received = `/ui/deliveries?since=${encodeURIComponent(hour)}&amp;until=${encodeURIComponent(next)}`;
    expect(table).toContain(`<a href="${received}"`);
    expect(table).toContain(`<a href="/ui/deliveries?status=failed&amp;since=${encodeURIComponent(hour)}&amp;until=${encodeURIComponent(next)}"`);
    // The failure rate over the day, its two counts linked.
    expect(page.text).toMatch(/<span class="label">Failure rate<\/span><span class="value">\d+(\.\d)? %<\/span>/);
    expect(page.text).toMatch(/<a href="\/ui\/deliveries\?status=failed&amp;since=[^"]+" aria-label="\d+ failed of those received in the last 24 hours">/);
  });

  it("reloads itself every minute when script runs (the snapshot changes at most that often)", async () => {
    expect((await ui("/ui")).text).toContain('<body data-refresh="60">');
  });

  it("escapes a source's name", async () => {
    await putDelivery({ source: "<script>alert(1)</script>", id: "x" });
    await dropSnapshot();
    const page = await ui("/ui");
    expect(page.text).toContain('<th scope="row">&lt;script&gt;alert(1)&lt;/script&gt;</th>');
    expect(page.text).not.toContain("<script>alert");
  });

  it("sends a browser without a session to sign in, and back here after", async () => {
    const result = await ui("/ui", { session: null });
    expect(result.status).toBe(303);
    expect(result.headers.get("location")).toBe("/ui/login?next=%2Fui");
  });
});
