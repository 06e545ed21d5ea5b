/**
 * What the receiver hands a store to record, and what became of it. Shared by the D1 store
 * (d1/record.ts, d1/group-commit.ts) and the Postgres store (postgres/record.ts).
 */

export interface NewDelivery {
  readonly source: string;
  readonly id: string;
  readonly eventType: string | null;
  /** The raw request body, stored as a BLOB byte for byte (D1: sent as hex, d1/columns.ts; Postgres: bytea). */
  readonly body: Uint8Array;
  readonly receivedAtMs: number;
  /** SHA-256 of the signed content, when the source deduplicates on content; else absent or null. */
  readonly contentDigest?: Uint8Array | null;
  /** The request headers to keep, as `headersToStore` (headers.ts) gives them; credentials never. */
  readonly headers?: string | null;
  /**
   * Set when the source's filter kept the delivery out (docs/filters.md): why, as
   * `filteredReason` (filtered.ts) writes it. The row is stored finished, as `filtered`, and never enqueued.
   */
  readonly filtered?: string | null;
}

export type RecordOutcome = "stored" | "duplicate";

/**
 * The outcome of a record, after `count` has counted it when it is a duplicate (each store's
 * duplicates.ts). The count is a trace, not the decision: when it fails, the answer "duplicate"
 * stands (the row is saved, a 503 would only make the provider send it once more) and the failure
 * is logged without the delivery's content.
 */
export async function withDuplicateCounted(outcome: RecordOutcome, count: () => Promise<void>): Promise<RecordOutcome> {
  if (outcome !== "duplicate") return outcome;
  try {
    await count();
  } catch (error) {
    console.warn(`duplicate not counted: ${error instanceof Error ? error.message : String(error)}`);
  }
  return outcome;
}
