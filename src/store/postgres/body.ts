/**
 * How a body is read from a Postgres row: the bytea as stored and its encoding (store/body-encoding.ts),
 * given back as the bytes as received. Every statement that reads a body selects BODY_COLUMNS (or
 * its guarded form) and maps the row with `bodyFromRow`.
 */
import { decodeBody } from "../body-encoding";
import { toBytes } from "./client";

/** The columns a body is read from. */
export const BODY_COLUMNS = "body, body_encoding";

/** The same, the body only where `when` (an SQL condition) holds, else NULL. */
export function bodyColumnsWhen(when: string): string {
  return `CASE WHEN ${when} THEN body END AS body, body_encoding`;
}

/** What a row read with BODY_COLUMNS holds of its body. */
export interface BodyRow {
  body: Uint8Array | null;
  body_encoding: string | null;
}

/** The body as received in a row read with BODY_COLUMNS; null for NULL (pruned, or its condition did not hold). */
export function bodyFromRow(row: BodyRow): Uint8Array | null {
  return row.body === null ? null : decodeBody(toBytes(row.body), row.body_encoding);
}
