/**
 * Bodies at rest, compressed: both stores keep a body as the bytes `encodeBody` gives and the name
 * of their encoding (column `body_encoding`: migrations/0014, migrations-postgres/0007), and
 * `decodeBody` gives back the bytes as received, byte for byte. Everything above the store (the
 * handler's `ctx.rawBody`, a forward, a replay, the dashboard's download) sees only those.
 *
 * - The encoding is raw DEFLATE (RFC 1951; `deflate-raw`, the name CompressionStream gives it), the
 *   smallest frame: no gzip or zlib header and trailer (18 and 6 bytes), and webhook JSON shrinks
 *   several times over. Kept only when it is smaller than the body: a short (under 1 KiB) or
 *   already compressed body is stored as it came, with no encoding, as every row stored before compression is.
 * - Synchronous (node:zlib, the runtime's native zlib under `nodejs_compat`): the claim reads its
 *   body in the row's own mapping, and a stream would make each reader of a row asynchronous. A
 *   2 KB body deflates in tens of microseconds, on the receiver's path.
 * - The dedup digest and the group commit's size are of the bytes as received: encoding happens in
 *   the store's insert, after both.
 * - Decompression is bounded by MAX_BODY_BYTES_CEILING: we compress only what we accepted, but a
 *   row that inflates past any body we could have accepted is refused rather than expanded.
 */
import { deflateRawSync, inflateRawSync } from "node:zlib";
import { MAX_BODY_BYTES_CEILING } from "../config";

/** The one encoding written; null (or a missing column) is the body as received. */
export const DEFLATE_RAW = "deflate-raw";

export type BodyEncoding = typeof DEFLATE_RAW | null;

/** A body as a store keeps it. */
export interface StoredBody {
  readonly bytes: Uint8Array;
  readonly encoding: BodyEncoding;
}

/**
 * Below this many bytes a body is stored as it came, without trying: it saves D1 next to nothing
 * there. A D1 row under about 1,000 bytes stays in its page whatever its size, and one above it
 * with a body under 1 KiB spills into an overflow page with the request headers all the same
 * (docs/benchmark.md "Capacity"). Each compression, and each read of a compressed body, pays a
 * fixed setup in the runtime: small bodies, the most common, are spared it.
 */
const SMALLEST_TO_COMPRESS = 1_024;

/**
 * zlib's level 6, its default. On the 324 GitHub examples of bench/capacity.mjs it keeps 15.4% of
 * the bytes, level 1 17.2% and level 9 15.4%; a body of a few KB deflates in tens to a couple of
 * hundred microseconds at any of them (the bench's runtime CPU per delivery shows the cost).
 */
const LEVEL = 6;

/**
 * The bytes to store for `body`, and their encoding: compressed when that is smaller.
 * @example
 * const { bytes, encoding } = encodeBody(new TextEncoder().encode(json));
 */
export function encodeBody(body: Uint8Array): StoredBody {
  if (body.byteLength < SMALLEST_TO_COMPRESS) return { bytes: body, encoding: null };
  const compressed = deflateRawSync(body, { level: LEVEL });
  if (compressed.byteLength >= body.byteLength) return { bytes: body, encoding: null };
  // A plain Uint8Array over the same memory: the drivers bind a Buffer and a Uint8Array alike.
  return { bytes: new Uint8Array(compressed.buffer, compressed.byteOffset, compressed.byteLength), encoding: DEFLATE_RAW };
}

/** A stored body that cannot be read back: an encoding this code does not know, or bytes that do not inflate within the bound. */
export class StoredBodyError extends Error {
  override readonly name = "StoredBodyError";
}

/**
 * The body as received from the bytes a store kept and their encoding (null or undefined: as
 * received, as in rows stored before compression).
 * @example
 * const body = decodeBody(row.body, row.body_encoding);
 */
export function decodeBody(stored: Uint8Array, encoding: string | null | undefined): Uint8Array {
  if (encoding === null || encoding === undefined) return stored;
  if (encoding !== DEFLATE_RAW) throw new StoredBodyError(`a stored body has an unknown encoding (${JSON.stringify(encoding).slice(0, 40)})`);
  let inflated: Uint8Array;
  try {
    inflated = inflateRawSync(stored, { maxOutputLength: MAX_BODY_BYTES_CEILING });
  } catch (error) {
    throw new StoredBodyError(`a stored body does not inflate within ${MAX_BODY_BYTES_CEILING} bytes: ${error instanceof Error ? error.message : String(error)}`);
  }
  return new Uint8Array(inflated.buffer, inflated.byteOffset, inflated.byteLength);
}
