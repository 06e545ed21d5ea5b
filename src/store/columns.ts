/** How D1 columns are read back: BLOBs arrive as an ArrayBuffer or as an array of byte values. */

/** A BLOB column as stored. */
export type BlobColumn = ArrayBuffer | number[] | null;

/** The bytes of a BLOB column, whichever shape D1 returns it in; null for NULL. */
export function blobBytes(value: BlobColumn): Uint8Array | null {
  if (value === null) return null;
  return value instanceof ArrayBuffer ? new Uint8Array(value) : Uint8Array.from(value);
}
