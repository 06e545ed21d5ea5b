/** D1 reads for the tests of D1's own workings (body chunks, group commit); tests that run on both stores read through store-db.ts. */
import { env } from "cloudflare:workers";

export interface DeliveryRow {
  source: string;
  id: string;
  event_type: string | null;
  status: string;
  attempts: number;
  error: string | null;
  handled: number | null;
  body: ArrayBuffer | number[] | null;
  lease_token: number | null;
  received_at: string;
  updated_at: string;
}

export async function deliveryRows(source?: string): Promise<DeliveryRow[]> {
  const statement = source
    ? env.DB.prepare("SELECT * FROM deliveries WHERE source = ? ORDER BY id").bind(source)
    : env.DB.prepare("SELECT * FROM deliveries ORDER BY source, id");
  return (await statement.all<DeliveryRow>()).results;
}

export async function deliveryRow(source: string, id: string): Promise<DeliveryRow | null> {
  return env.DB.prepare("SELECT * FROM deliveries WHERE source = ? AND id = ?").bind(source, id).first<DeliveryRow>();
}

/** A BLOB column as D1 returns it when read directly: an ArrayBuffer or an array of byte values. */
export type BlobColumn = ArrayBuffer | number[] | null;

/** The bytes of a BLOB column read directly, whichever shape D1 returns it in; null for NULL. */
export function blobBytes(value: BlobColumn): Uint8Array | null {
  if (value === null) return null;
  return value instanceof ArrayBuffer ? new Uint8Array(value) : Uint8Array.from(value);
}
