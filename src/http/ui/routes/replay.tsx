/**
 * Replays from the dashboard, through processing/replay.ts as the admin API's (it resets the row,
 * then the lease, then enqueues, in that order):
 * - `POST /ui/deliveries/:source/:id/replay` (`force=true` for a done one, sent by the
 *   confirmation page `GET /ui/deliveries/:source/:id/replay`), then back to the delivery's page;
 * - `GET /ui/replay?…filters` (how many failed ones match, and a confirmation), and
 *   `POST /ui/replay`, which replays one bounded batch (oldest first) and comes back to the same
 *   page to confirm the next: never more in all than were confirmed, so deliveries that fail again
 *   at once cannot keep a run going.
 */
import { Hono } from "hono";
import { replayDelivery, replayFailed } from "../../../processing/replay";
import { SUBSCRIBER_NAME } from "../../../handler-api/registry";
import type { AppEnv } from "../../types";
import { parseFilter } from "../filters";
import { renderPage } from "../layout";
import { deliveryHref, filterParams, query } from "../links";
import type { NoticeCode } from "../pages/delivery";
import { BulkReplayPage, ForceReplayPage } from "../pages/replay";
import { openStore } from "../../../store";

/** Deliveries replayed per confirmed batch: each is a D1 update and a lease object call. */
export const BULK_BATCH = 100;

const options = { section: "deliveries", signedIn: true } as const;

/** A count from a form or a link: a whole number ≥ 0, or undefined. */
function count(value: unknown): number | undefined {
  return typeof value === "string" && /^\d{1,9}$/.test(value) ? Number(value) : undefined;
}

export const replayRoutes = new Hono<AppEnv>()
  .get("/deliveries/:source/:id/replay", async (c) => {
    const ref = { source: c.req.param("source"), id: c.req.param("id") };
    const delivery = await openStore(c.env).get(ref);
    // Only a done delivery with its body needs this page; anything else is shown as it is.
    if (!delivery || delivery.status !== "done" || delivery.body === null) return c.redirect(deliveryHref(ref), 303);
    return renderPage(c, { ...options, title: "Force replay" }, <ForceReplayPage delivery={delivery} />);
  })
  .post("/deliveries/:source/:id/replay", async (c) => {
    const ref = { source: c.req.param("source"), id: c.req.param("id") };
    const form = await c.req.parseBody();
    // One subscriber's run of a fanned-out delivery (its row on the delivery's page); a name that is none is ignored.
    const subscriber = typeof form.subscriber === "string" && SUBSCRIBER_NAME.test(form.subscriber) ? form.subscriber : undefined;
    const result = await replayDelivery(c.env, subscriber === undefined ? ref : { ...ref, subscriber }, { force: form.force === "true" });
    const notice: NoticeCode | undefined =
      result.kind === "replayed"
        ? "replayed"
        : result.kind === "body_pruned"
          ? "body-pruned"
          : result.kind === "conflict"
            ? result.status === "done"
              ? "done"
              : "in-flight"
            : undefined;
    // Back to the delivery (post/redirect/get: a reload does not replay again); its page says what happened.
    return c.redirect(deliveryHref(ref, notice ? `?notice=${notice}` : ""), 303);
  })
  .get("/replay", async (c) => {
    const params = new URL(c.req.url).searchParams;
    const parsed = parseFilter(params);
    const filter = { ...parsed.filter, status: undefined };
    const replayed = count(params.get("replayed"));
    const left = count(params.get("left"));
    const progress = replayed !== undefined && left !== undefined ? { replayed, left } : undefined;
    const matching = await openStore(c.env).countFailed(filter);
    const page = <BulkReplayPage filter={filter} problems={parsed.problems} matching={matching} progress={progress} batchSize={BULK_BATCH} />;
    return renderPage(c, { ...options, title: "Replay failed deliveries" }, page);
  })
  .post("/replay", async (c) => {
    const form = await c.req.parseBody();
    const fields = new URLSearchParams();
    for (const name of ["source", "subscriber", "eventType", "since", "until"]) if (typeof form[name] === "string") fields.set(name, form[name]);
    const parsed = parseFilter(fields);
    const filter = { ...parsed.filter, status: undefined };
    const left = count(form.left) ?? 0;
    const before = count(form.replayed) ?? 0;
    // A filter that could not be read replays nothing: it would take more than was confirmed.
    const result = parsed.problems.length > 0 || left === 0 ? { replayed: 0 } : await replayFailed(c.env, { ...filter, limit: Math.min(BULK_BATCH, left) });
    const next = { ...filterParams(filter), replayed: String(before + result.replayed), left: String(result.replayed === 0 ? 0 : left - result.replayed) };
    return c.redirect(`/ui/replay${query(next)}`, 303);
  });
