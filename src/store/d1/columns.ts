/**
 * How bodies travel between the Worker and D1.
 *
 * The D1 binding hands a BLOB to the Worker, and takes one from it, as an array of numbers: one JS
 * number per byte, serialized as decimal text on the way (workerd's d1-api turns an ArrayBuffer
 * parameter into `Array.from(bytes)`). For a 1 MiB body that is a million-element array plus
 * about 3.5 MB of text, several times the body, in the isolate that holds 128 MB. So bodies go
 * as hex text instead, two characters per byte: `unhex()` on the way in, `hex()` on the way out.
 * D1 caps any string at 2,000,000 bytes, so a body travels in chunks of BODY_CHUNK_BYTES, each
 * well within the cap as hex, and is one BLOB in the table.
 *
 * What travels is the body as stored: compressed or not, as store/body-encoding.ts decided, with
 * its encoding in `body_encoding`. `bodyColumns` reads the encoding beside the chunks, and
 * `bodyFromRow` gives back the bytes as received.
 *
 * Measured with 50 bodies of 1 MiB through `wrangler dev` (test/e2e/large-bodies.test.mjs), peak
 * resident memory of the runtime above its idle 140 MiB: ingesting ≈ 800 → ≈ 310 MiB, consuming
 * ≈ 860 → ≈ 320 MiB, both together ≈ 990 → ≈ 400 MiB.
 */
import { toHex } from "../../hex";
import { decodeBody } from "../body-encoding";

/** Bytes per chunk: its hex (1 MiB) stays far below D1's 2,000,000-byte string cap. */
export const BODY_CHUNK_BYTES = 512 * 1024;
/** Chunks per body: room for 2 MiB, above the largest MAX_BODY_BYTES the config accepts (1,900,000). */
export const BODY_CHUNKS = 4;

/** The value of each hex digit by character code; SQLite's hex() writes upper case. */
const HEX_VALUE = (() => {
  const table = new Uint8Array(128);
  for (let digit = 0; digit < 16; digit++) {
    table["0123456789ABCDEF".charCodeAt(digit)] = digit;
    table["0123456789abcdef".charCodeAt(digit)] = digit;
  }
  return table;
})();

/**
 * The SQL that rebuilds a body from BODY_CHUNKS hex parameters starting at `?firstParam`
 * (bind them with `bodyParams`). `||` joins as text; the CAST gives the bytes back as a BLOB.
 * @example
 * db.prepare(`INSERT INTO t (body) VALUES (${bodyFromParams(1)})`).bind(...bodyParams(bytes));
 */
export function bodyFromParams(firstParam: number): string {
  const chunks = Array.from({ length: BODY_CHUNKS }, (_, index) => `unhex(?${firstParam + index})`);
  return `CAST(${chunks.join(" || ")} AS BLOB)`;
}

/** The BODY_CHUNKS hex parameters of a body (empty strings past its end). */
export function bodyParams(bytes: Uint8Array): string[] {
  if (bytes.length > BODY_CHUNK_BYTES * BODY_CHUNKS) throw new RangeError(`a body of ${bytes.length} bytes does not fit in ${BODY_CHUNKS} chunks`);
  return Array.from({ length: BODY_CHUNKS }, (_, index) => toHex(bytes.subarray(index * BODY_CHUNK_BYTES, (index + 1) * BODY_CHUNK_BYTES)));
}

/**
 * The result columns that read `column` as hex chunks, and its encoding from `<column>_encoding`
 * (read them back with `bodyFromRow`). `when`, if given, is an SQL condition: the body is read
 * only where it holds (else NULL).
 */
export function bodyColumns(column = "body", when?: string): string {
  const guard = (expression: string) => (when ? `CASE WHEN ${when} THEN ${expression} END` : expression);
  const chunks = Array.from(
    { length: BODY_CHUNKS },
    (_, index) => `${guard(`hex(substr(${column}, ${index * BODY_CHUNK_BYTES + 1}, ${BODY_CHUNK_BYTES}))`)} AS body_hex_${index}`,
  );
  return [...chunks, `${guard(`${column} IS NOT NULL`)} AS body_present`, `${guard(`${column}_encoding`)} AS body_encoding`].join(", ");
}

/**
 * The body as received that a row read with `bodyColumns` holds; null for NULL (or when its
 * condition did not hold). A row without an encoding (stored before compression) is read as is.
 */
export function bodyFromRow(row: Record<string, unknown>): Uint8Array | null {
  if (!row.body_present) return null;
  const chunks = Array.from({ length: BODY_CHUNKS }, (_, index) => (row[`body_hex_${index}`] as string | null) ?? "");
  const bytes = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.length / 2, 0));
  let offset = 0;
  for (const hex of chunks) {
    for (let index = 0; index < hex.length; index += 2) bytes[offset++] = (HEX_VALUE[hex.charCodeAt(index)]! << 4) | HEX_VALUE[hex.charCodeAt(index + 1)]!;
  }
  return decodeBody(bytes, row.body_encoding as string | null | undefined);
}
