/**
 * A duplicate leaves a trace (migrations-postgres/0003; the D1 store's d1/duplicates.ts says why
 * and when): the original's row counts it, its source's counter grows. One statement, run only
 * after the insert answered "duplicate"; neither column is one the lease fence or the unhandled
 * triggers watch.
 */
import { isoTime } from "../clock";
import type { NewDelivery } from "../new-delivery";
import type { Queryable } from "./client";

export const DUPLICATE_SQL = `WITH original AS (
    SELECT coalesce(
      (SELECT id FROM deliveries WHERE source = $1 AND id = $2),
      (SELECT id FROM deliveries WHERE source = $1 AND content_digest = $3)) AS id
  ), bumped AS (
    UPDATE deliveries SET duplicates = duplicates + 1, last_duplicate_at = $4
     WHERE source = $1 AND id = (SELECT id FROM original)
  )
  INSERT INTO inbox_counts AS counts (source, duplicates) VALUES ($1, 1)
  ON CONFLICT (source) DO UPDATE SET duplicates = counts.duplicates + 1`;

/** Counts `delivery`, just answered "duplicate", on its original and its source. Throws when the database fails. */
export async function countDuplicate(db: Queryable, delivery: NewDelivery): Promise<void> {
  await db.query(DUPLICATE_SQL, [delivery.source, delivery.id, delivery.contentDigest ?? null, isoTime(delivery.receivedAtMs)]);
}
