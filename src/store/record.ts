/**
 * The ingest write: one statement that stores a delivery once.
 *
 * `ON CONFLICT DO NOTHING` on the primary key (source, id) lets the database alone decide what
 * is a duplicate, even for copies that arrive at the same instant: no check-then-act. The
 * receiver sends it through group-commit.ts, which writes concurrent deliveries as one batch.
 */
import { isoTime } from "./clock";

export interface NewDelivery {
  readonly source: string;
  readonly id: string;
  readonly eventType: string | null;
  /** The raw request body, stored as a BLOB byte for byte. */
  readonly body: Uint8Array;
  readonly receivedAtMs: number;
}

export type RecordOutcome = "stored" | "duplicate";

/** The prepared insert for one delivery; `meta.changes` is 1 for a new row, 0 for a duplicate. */
export function insertDelivery(db: D1Database, delivery: NewDelivery): D1PreparedStatement {
  const now = isoTime(delivery.receivedAtMs);
  return db
    .prepare(
      `INSERT INTO deliveries (source, id, event_type, status, attempts, body, received_at, updated_at)
       VALUES (?1, ?2, ?3, 'received', 0, ?4, ?5, ?5)
       ON CONFLICT (source, id) DO NOTHING`,
    )
    .bind(delivery.source, delivery.id, delivery.eventType, delivery.body, now);
}
