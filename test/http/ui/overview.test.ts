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
    expect(page.text).toMatch(/<th scope="row">ui-ov-dup<\/th>(?:(?!<\/tr>)[\s\S])*aria-label="1 deliveries of ui-ov-dup">1<\/a><\/td><td class="num">2<\/td><td>/);
    expect(page.text).toMatch(/<span class="label">Duplicates recognised \(a provider sent a delivery again\)<\/span><span class="value">\d+<\/span>/);
  });

  it("shows each source's security grade, linked to its row on the Sources page", async () => {
    await putDelivery({ source: "gitlab", id: "ui-ov-grade-1", status: "done", attempts: 1 });
    await putDelivery({ source: "stripe", id: "ui-ov-grade-2", status: "done", attempts: 1 });
    await putDelivery({ source: "ui-ov-gone", id: "g1", status: "done", attempts: 1 });
    await dropSnapshot();
    const page = await ui("/ui");
    const gradeCell = (source: string) => new RegExp(`<th scope="row">${source}</th>(?:(?!</tr>)[\\s\\S])*<a href="/ui/sources#source-${source}" aria-label="security grade of ${source}"><span class="([^"]*)">([^<]*)</span></a></td></tr>`).exec(page.text);
    expect(gradeCell("gitlab")?.slice(1)).toEqual(["badge badge-grade-weak", "weak"]);
    expect(gradeCell("stripe")?.slice(1)).toEqual(["badge badge-grade-strong", "strong"]);
    // A source src/sources.ts does not name (renamed since its deliveries): no grade to show.
    expect(gradeCell("ui-ov-gone")?.slice(1)).toEqual(["muted", "unknown"]);
    expect(page.text).toContain('<th scope="col"><a href="/ui/sources">security grade</a></th>');
  });

  it("draws whole-number ticks only: no 0.5 for a busiest hour of 1 (nor 2.5 for 5)", async () => {
    const hours = (top: number) => Array.from({ length: 24 }, (_, index) => ({ hour: new Date(Date.UTC(2026, 2, 1, index)).toISOString(), received: index === 3 ? top : 0, failed: 0 }));
    const ticks = async (top: number) => [...String(await HourlyChart({ hours: hours(top) })).matchAll(/<text x="34" y="[\d.]+" text-anchor="end">([^<]*)<\/text>/g)].map((match) => match[1]);
    expect(await ticks(1)).toEqual(["0", "1"]);
    expect(await ticks(5)).toEqual(["0", "5"]);
    expect(await ticks(20)).toEqual(["0", "10", "20"]);
  });
});

describe("GET /ui/sources", () => {
  /** The cells of a source's row on the Sources page, as text. */
  function rowOf(html: string, source: string): string[] | undefined {
    const row = new RegExp(`<tr id="source-${source}">([\\s\\S]*?)</tr>`).exec(html)?.[1];
    return row === undefined ? undefined : [...row.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map((cell) => cell[1]!.replace(/<[^>]+>/g, "|").replace(/\|+/g, "|").replace(/^\||\|$/g, ""));
  }

  it("lists the configured sources with their grade, the four points, what it means and the dedup key", async () => {
    const page = await ui("/ui/sources", { env: { ADYEN_WEBHOOK_SECRET: "0a0b" } });
    expect(page.status).toBe(200);
    expect(page.text).toContain('<a href="/ui/sources" aria-current="page">Sources</a>');
    const stripe = rowOf(page.text, "stripe");
    expect(stripe?.slice(0, 7)).toEqual(["stripe", "stripe", "strong", "yes", "yes", "yes", "no"]);
    expect(stripe?.[7]).toBe("body, timestamp and delivery id signed; the secret never travels");
    const github = rowOf(page.text, "github");
    expect(github?.slice(0, 7)).toEqual(["github", "github", "fair", "yes", "no", "no", "no"]);
    expect(github?.[7]).toBe("no signed timestamp: a captured request stays valid; the dedup key stops its replay|delivery id not signed: a copy under a new id is caught by its content");
    const gitlab = rowOf(page.text, "gitlab");
    expect(gitlab?.slice(0, 7)).toEqual(["gitlab", "gitlab", "weak", "no", "no", "no", "yes"]);
    expect(gitlab?.[7]).toContain("body not signed: whoever has the secret or one captured request can send any body");
    expect(gitlab?.[7]).toContain("the secret travels in every request");
    const adyen = rowOf(page.text, "adyen");
    expect(adyen?.slice(2, 4)).toEqual(["fair", "partly"]);
    // What the grades mean, and where it is explained at length.
    expect(page.text).toContain("<code>docs/providers.md</code> (section &quot;Security grade&quot;)");
    expect(page.text).toMatch(/<strong>weak<\/strong>: the body is not signed or the secret travels with every request/);
  });

  it("leaves out a catalogue source with no secret and no delivery, and counts it", async () => {
    const page = await ui("/ui/sources", { env: { ZOOM_WEBHOOK_SECRET: "" } });
    expect(rowOf(page.text, "zoom")).toBeUndefined();
    expect(page.text).toMatch(/\d+ more providers in the catalogue have no secret set here/);
    const withZoom = await ui("/ui/sources", { env: { ZOOM_WEBHOOK_SECRET: "zoom-secret" } });
    expect(rowOf(withZoom.text, "zoom")?.slice(0, 3)).toEqual(["zoom", "zoom", "strong"]);
  });

  it("lists a source that has deliveries, escaped, even when src/sources.ts no longer names it", async () => {
    await putDelivery({ source: "<img src=x onerror=alert(1)>", id: "s1" });
    await dropSnapshot();
    const page = await ui("/ui/sources");
    expect(page.text).toContain("&lt;img src=x onerror=alert(1)&gt;</a>");
    expect(page.text).not.toContain("<img src=x");
    expect(page.text).toContain('id="source-%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E"');
    expect(page.text).toContain('<span class="muted">not in src/sources.ts</span>');
  });
});

describe("GET /", () => {
  it("redirects to the dashboard", async () => {
    const response = await exports.default.fetch(new Request(`${BASE_URL}/`, { redirect: "manual" }));
    expect(response.status).toBe(302);
    expect(response.headers.get("location")).toBe("/ui");
  });
});
