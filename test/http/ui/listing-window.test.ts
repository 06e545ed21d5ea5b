/**
 * The list's window (store/listing-query.ts LISTING_WINDOW): a filter no index serves looks at most that
 * many deliveries per page, and the page says how far back it searched. In a file of its own: its
 * 10,001 rows would fill the window of every other list test.
 */
import { describe, expect, it } from "vitest";
import { SqlStatement, type SqlValue } from "../../../src/sql";
import { LISTING_WINDOW } from "../../../src/store/listing-query";
import { exec } from "../../helpers/store-db";
import { ui } from "./client";

/** Rows per INSERT: three values each, within D1's 100 bound parameters a statement. */
const ROWS_PER_INSERT = 33;

/** Stores done deliveries `w-1` … `w-<count>` of 'ui-window', 'w-i' received at 1,600,000,000 + i s, in one transaction. */
async function insertWindow(count: number): Promise<void> {
  const statements: SqlStatement[] = [];
  for (let first = 1; first <= count; first += ROWS_PER_INSERT) {
    const text = ["INSERT INTO deliveries (source, id, event_type, status, attempts, body, received_at, updated_at) VALUES "];
    const values: SqlValue[] = [];
    for (let i = first; i < Math.min(first + ROWS_PER_INSERT, count + 1); i++) {
      text[text.length - 1] += `${i === first ? "" : ", "}('ui-window', `;
      text.push(", 'common.event', 'done', 1, ", ", ", ", '2020-01-01T00:00:00.000Z')");
      values.push(`w-${i}`, new Uint8Array([0x7b, 0x7d]), new Date((1_600_000_000 + i) * 1000).toISOString());
    }
    statements.push(new SqlStatement(text, values));
  }
  await exec(...statements);
}

const ids = (html: string) => [...(/<tbody>([\s\S]*?)<\/tbody>/.exec(html)?.[1] ?? "").matchAll(/<a href="\/ui\/deliveries\/[^"]+">([^<]+)<\/a>/g)].map((match) => match[1]);

describe("GET /ui/deliveries with a filter no index serves", () => {
  it("says how far back a page searched when its filter matched too little in the listing's window, and links further back", async () => {
    await insertWindow(LISTING_WINDOW + 1);
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
