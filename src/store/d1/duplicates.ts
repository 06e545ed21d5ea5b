/**
 * A duplicate leaves a trace (migrations/0009): the original's row counts it (`duplicates`,
 * `last_duplicate_at`) and its source's counter grows (`inbox_counts.duplicates`). Run only after
 * the insert answered "duplicate", the rare path: a new delivery writes nothing more than before.
 *
 * The original is the row with the same (source, id), else the one with the same content digest
 * (a signed request resent under a fresh id, migrations/0004). One batch, one round trip, two rows
 * written (test/store/d1/write-cost.test.ts). Neither statement touches commit_token or status, so
 * the lease fence and the unhandled counters stay out of it.
 */
import { isoTime } from "../clock";
import type { NewDelivery } from "../new-delivery";

export const DUPLICATE_SQL = {
  bump: `UPDATE deliveries SET duplicates = duplicates + 1, last_duplicate_at = ?4
    WHERE source = ?1 AND id = coalesce(
      (SELECT id FROM deliveries WHERE source = ?1 AND id = ?2),
      (SELECT id FROM deliveries WHERE source = ?1 AND content_digest = ?3))`,
  count: `INSERT INTO inbox_counts (source, duplicates) VALUES (?1, 1)
    ON CONFLICT (source) DO UPDATE SET duplicates = duplicates + 1`,
} as const;

/** Counts `delivery`, just answered "duplicate", on its original and its source. Throws when D1 fails. */
export async function countDuplicate(db: D1Database, delivery: NewDelivery): Promise<void> {
  await db.batch([
    db.prepare(DUPLICATE_SQL.bump).bind(delivery.source, delivery.id, delivery.contentDigest ?? null, isoTime(delivery.receivedAtMs)),
    db.prepare(DUPLICATE_SQL.count).bind(delivery.source),
  ]);
}
