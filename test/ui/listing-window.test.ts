/**
 * The list's window (store/listing.ts LISTING_WINDOW): a filter no index serves looks at most that
 * many deliveries per page, and the page says how far back it searched. In a file of its own: its
 * 10,001 rows would fill the window of every other list test.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { LISTING_WINDOW } from "../../src/store/listing";
import { ui } from "./client";

const ids = (html: string) => [...(/<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? "").matchAll(/<a href="\/ui\/deliveries\/[^"]+">([^<]+)<\/a>/g)].map((match) => match[1]);

describe("GET /ui/deliveries with a filter no index serves", () => {
  it("says how far back a page searched when its filter matched too little in the listing's window, and links further back", async () => {
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${LISTING_WINDOW + 1})
       INSERT INTO deliveries (source, id, event_type, status, attempts, body, received_at, updated_at)
       SELECT 'ui-window', 'w-' || i, 'common.event', 'done', 1, x'7b7d', strftime('%Y-%m-%dT%H:%M:%fZ', 1600000000 + i, 'unixepoch'), '2020-01-01T00:00:00.000Z' FROM n`,
    ).run();
    const page = await ui("/ui/deliveries?eventType=rare.event&until=2020-09-14T00:00:00Z");
    expect(ids(page.text)).toEqual([]);
    expect(page.text).toMatch(/searched the deliveries received back to <time datetime="2020-09-1[0-9]T[^"]+">/);
    const further = /<a href="(\/ui\/deliveries\?[^"]*cursor=[^"]+)">Search further back<\/a>/.exec(page.text)?.[1];
    expect(further).toBeDefined();
    const next = await ui(further!.replaceAll("&amp;", "&"));
    expect(next.status).toBe(200);
    expect(next.text).not.toContain("Search further back");
  });

});
