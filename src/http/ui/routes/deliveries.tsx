/**
 * `GET /ui/deliveries`: one page of the list (the admin API's keyset cursor), or a lookup by id;
 * `GET /ui/deliveries/:source/:id`: one delivery; `GET /ui/deliveries/:source/:id/body`: its bytes.
 */
import { Hono } from "hono";
import { SOURCES } from "../../../sources";
import { encodeCursor } from "../../cursor";
import type { AppEnv } from "../../types";
import { parseFilter } from "../filters";
import { renderPage } from "../layout";
import { deliveryHref } from "../links";
import { DeliveriesPage } from "../pages/deliveries";
import { DeliveryPage, noticeFor } from "../pages/delivery";
import { openStore, type DeliverySummary } from "../../../store";

export const PAGE_SIZE = 50;

export const deliveryRoutes = new Hono<AppEnv>()
  .get("/deliveries", async (c) => {
    const nowMs = Date.now();
    const parsed = parseFilter(new URL(c.req.url).searchParams);
    const options = { title: "Deliveries", section: "deliveries", signedIn: true } as const;
    if (parsed.id !== undefined) {
      const source = parsed.filter.source;
      const store = openStore(c.env);
      const found: DeliverySummary[] =
        source === undefined ? await store.findById(Object.keys(SOURCES), parsed.id) : [await store.get({ source, id: parsed.id })].filter((row) => row !== null);
      // One match: straight to it. An engineer paged at night pastes an id and lands on the delivery.
      if (found.length === 1) return c.redirect(deliveryHref(found[0]!), 303);
      const page = (
        <DeliveriesPage
          filter={{ source }}
          problems={parsed.problems}
          deliveries={found}
          nextCursor={null}
          paged={false}
          lookup={{ id: parsed.id, source }}
          nowMs={nowMs}
        />
      );
      return renderPage(c, options, page);
    }
    const result = await openStore(c.env).list({ ...parsed.filter, limit: PAGE_SIZE, after: parsed.after });
    const page = (
      <DeliveriesPage
        filter={parsed.filter}
        problems={parsed.problems}
        deliveries={result.deliveries}
        nextCursor={result.nextKey ? encodeCursor(result.nextKey) : null}
        searchedThrough={result.searchedThrough}
        paged={parsed.after !== undefined}
        nowMs={nowMs}
      />
    );
    return renderPage(c, options, page);
  })
  .get("/deliveries/:source/:id", async (c) => {
    const ref = { source: c.req.param("source"), id: c.req.param("id") };
    const delivery = await openStore(c.env).get(ref);
    if (!delivery) {
      return renderPage(
        c,
        { title: "Not found", section: "deliveries", signedIn: true },
        <>
          <h1>No such delivery</h1>
          <p>
            There is no delivery “{ref.id}” in the source “{ref.source}”. Retention deletes settled deliveries after <code>RETENTION_DAYS</code>.{" "}
            <a href="/ui/deliveries">All deliveries</a>
          </p>
        </>,
        404,
      );
    }
    return renderPage(
      c,
      { title: `${delivery.source}/${delivery.id}`, section: "deliveries", signedIn: true },
      <DeliveryPage delivery={delivery} notice={noticeFor(c.req.query("notice"))} nowMs={Date.now()} />,
    );
  })
  .get("/deliveries/:source/:id/body", async (c) => {
    const ref = { source: c.req.param("source"), id: c.req.param("id") };
    const delivery = await openStore(c.env).get(ref);
    if (!delivery || delivery.body === null) return c.text("no body: the delivery does not exist, or retention cleared its body", 404);
    // Bytes as signed, never rendered: a download with a type no browser runs, and no sniffing.
    return new Response(delivery.body, {
      headers: {
        "Content-Type": "application/octet-stream",
        "Content-Disposition": `attachment; filename="${downloadName(ref.source, ref.id)}"`,
        "X-Content-Type-Options": "nosniff",
      },
    });
  });

/** `<source>-<id>.bin` with anything but letters, digits, `.`, `_` and `-` replaced: no quote or path reaches the header. */
export function downloadName(source: string, id: string): string {
  return `${source}-${id}`.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 120) + ".bin";
}
