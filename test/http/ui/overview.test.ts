/**
 * `GET /ui`: the overview's numbers, each a link to the list it counts, the chart and its text
 * equivalent, the duplicates; `GET /` leads here. On a small inbox (every test's) the page's read
 * puts the numbers together afresh; some tests still drop the stored snapshot first, so that they
 * would hold under load too (where a snapshot up to a minute old is served).
 */
import { describe, expect, it } from "vitest";
import { sql } from "../../../src/sql";
import { OVERVIEW_MARK } from "../../../src/store/snapshot";
import { exec } from "../../helpers/store-db";
import { ui } from "./client";
import { HourlyChart } from "../../../src/http/ui/pages/chart";
import { openStore } from "../../../src/store";
import { recordDelivery } from "../../helpers/store-db";
import { env, exports } from "cloudflare:workers";
import { BASE_URL } from "../../helpers/signers";
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

  it("counts what changed since the last view at once, agreeing with the list page (no minute-old snapshot on a small inbox)", async () => {
    await putDelivery({ source: "ui-ov-now", id: "a", status: "done", attempts: 1 });
    // The page read once (as right after the demo): a snapshot is stored.
    await openStore(env).maintainOverview(Date.now());
    expect(linkTo((await ui("/ui")).text, "1 done deliveries of ui-ov-now")).toBeDefined();
    await putDelivery({ source: "ui-ov-now", id: "b", status: "done", attempts: 1 });
    await putDelivery({ source: "ui-ov-now", id: "c", status: "failed", attempts: 1, error: "boom" });
    const page = await ui("/ui");
    expect(linkTo(page.text, "2 done deliveries of ui-ov-now")).toBe("/ui/deliveries?status=done&source=ui-ov-now");
    expect(linkTo(page.text, "1 failed deliveries of ui-ov-now")).toBe("/ui/deliveries?status=failed&source=ui-ov-now");
    const list = await ui("/ui/deliveries?status=done&source=ui-ov-now");
    expect([...list.text.matchAll(/href="\/ui\/deliveries\/ui-ov-now\//g)]).toHaveLength(2);
  });

  it("shows the duplicates recognised, in all and by source", async () => {
    const delivery = { source: "ui-ov-dup", id: "evt_1", eventType: null, body: new TextEncoder().encode("{}"), receivedAtMs: Date.now() };
    await recordDelivery(delivery);
    expect(await recordDelivery(delivery)).toBe("duplicate");
    expect(await recordDelivery(delivery)).toBe("duplicate");
    const page = await ui("/ui");
    // The source's row ends with its duplicates, after its total.
    expect(page.text).toMatch(/<th scope="row">ui-ov-dup<\/th>(?:(?!<\/tr>)[\s\S])*aria-label="1 deliveries of ui-ov-dup">1<\/a><\/td><td class="num">2<\/td><\/tr>/);
    expect(page.text).toMatch(/<span class="label">Duplicates recognised \(a provider sent a delivery again\)<\/span><span class="value">\d+<\/span>/);
  });

  it("draws whole-number ticks only: no 0.5 for a busiest hour of 1 (nor 2.5 for 5)", async () => {
    const hours = (top: number) => Array.from({ length: 24 }, (_, index) => ({ hour: new Date(Date.UTC(2026, 2, 1, index)).toISOString(), received: index === 3 ? top : 0, failed: 0 }));
    const ticks = async (top: number) => [...String(await HourlyChart({ hours: hours(top) })).matchAll(/<text x="34" y="[\d.]+" text-anchor="end">([^<]*)<\/text>/g)].map((match) => match[1]);
    expect(await ticks(1)).toEqual(["0", "1"]);
    expect(await ticks(5)).toEqual(["0", "5"]);
    expect(await ticks(20)).toEqual(["0", "10", "20"]);
  });
});

describe("GET /", () => {
  it("redirects to the dashboard", async () => {
    const response = await exports.default.fetch(new Request(`${BASE_URL}/`, { redirect: "manual" }));
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/ui");
  });
});
