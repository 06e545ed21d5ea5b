/**
 * The ingest write: one statement that stores a delivery once.
 *
 * `ON CONFLICT DO NOTHING` lets the database alone decide what is a duplicate, even for copies
 * that arrive at the same instant: no check-then-act. It has no conflict target on purpose, so
 * either uniqueness counts: the primary key (source, id), or (source, content_digest) for
 * providers whose id is not signed (migrations/0004). The receiver sends it through
 * group-commit.ts, which writes concurrent deliveries as one batch.
 */
import { encodeBody } from "../body-encoding";
import { isoTime } from "../clock";
import { bodyFromParams, bodyParams } from "./columns";
import type { NewDelivery } from "../new-delivery";
import { FRESH_MARK_SQL } from "./fresh";
import { COUNTED_MARK_SQL } from "./marks";

/**
 * The prepared insert for one delivery; `meta.changes` is 1 for a new row, 0 for a duplicate
 * (same id, or same content digest). Its `received_at` is never behind either walk's mark: the
 * overview's count (`COUNTED_MARK_SQL`, store/d1/overview.ts) and the walk of untouched rows
 * (`FRESH_MARK_SQL`, store/d1/fresh.ts). A row that lands after a mark passed its receiver's clock
 * (a browned-out database holding a grouped insert back, or a sweep's mark moving up to its own
 * time while the insert was on its way) is dated at the mark, so that each walk still finds it
 * (two rows read, no write). The body is stored as `encodeBody`
 * gives it (compressed when that is smaller), with its encoding.
 */
export function insertDelivery(db: D1Database, delivery: NewDelivery): D1PreparedStatement {
  const now = isoTime(delivery.receivedAtMs);
  const body = encodeBody(delivery.body);
  return db
    .prepare(
      // A filtered delivery is the same one row, stored finished (store/filtered.ts): `done` with no
      // `handled` and its reason in `error`.
      `INSERT INTO deliveries (source, id, event_type, status, attempts, error, body, body_encoding, received_at, updated_at, content_digest, headers)
       VALUES (?1, ?2, ?3, CASE WHEN ?7 IS NULL THEN 'received' ELSE 'done' END, 0, ?7, ${bodyFromParams(9)}, ?8, max(?4, ${COUNTED_MARK_SQL}, ${FRESH_MARK_SQL}), ?4, ?5, ?6)
       ON CONFLICT DO NOTHING`,
    )
    .bind(delivery.source, delivery.id, delivery.eventType, now, delivery.contentDigest ?? null, delivery.headers ?? null, delivery.filtered ?? null, body.encoding, ...bodyParams(body.bytes));
}
