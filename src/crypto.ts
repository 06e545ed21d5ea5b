/**
 * Web Crypto primitives: HMAC, SHA-256, and constant-time comparison. No Node crypto: this runs in
 * the Workers runtime. Shared by the providers (signatures), processing (an attempt's key) and
 * forwarding (the signed request), beside hex.ts and base64.ts.
 */
import { toHex } from "./hex";

export type HashName = "SHA-256" | "SHA-1" | "SHA-512";

const encoder = new TextEncoder();

const keyCache = new Map<string, Promise<CryptoKey>>();
const KEY_CACHE_LIMIT = 256;

/** Imports (and caches, since importKey is not free) an HMAC key for `hash`. */
function hmacKey(hash: HashName, secret: Uint8Array): Promise<CryptoKey> {
  const cacheKey = `${hash}:${toHex(secret)}`;
  let key = keyCache.get(cacheKey);
  if (!key) {
    if (keyCache.size >= KEY_CACHE_LIMIT) keyCache.clear();
    key = crypto.subtle.importKey("raw", secret, { name: "HMAC", hash }, false, ["sign"]);
    keyCache.set(cacheKey, key);
  }
  return key;
}

/** HMAC of `parts` (concatenated, no separator) under `secret`. */
export async function hmac(hash: HashName, secret: string | Uint8Array, ...parts: (string | Uint8Array)[]): Promise<Uint8Array> {
  const key = await hmacKey(hash, typeof secret === "string" ? encoder.encode(secret) : secret);
  return new Uint8Array(await crypto.subtle.sign("HMAC", key, concat(parts)));
}

/** SHA-256 of `data`. */
export async function sha256(data: Uint8Array): Promise<Uint8Array> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", data));
}

/** Concatenates strings (as UTF-8) and raw bytes into one buffer, bytes untouched. */
export function concat(parts: readonly (string | Uint8Array)[]): Uint8Array {
  const chunks = parts.map((part) => (typeof part === "string" ? encoder.encode(part) : part));
  const out = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/**
 * Constant-time equality: a timing leak would let an attacker find a valid signature byte by
 * byte. Lengths are public (they follow from the algorithm), so a length mismatch may return early.
 */
export function timingSafeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let index = 0; index < a.length; index++) difference |= a[index]! ^ b[index]!;
  return difference === 0;
}

/** Constant-time equality of two strings (their UTF-8 bytes), e.g. GitLab's plain token. */
export function timingSafeEqualText(a: string, b: string): boolean {
  return timingSafeEqual(encoder.encode(a), encoder.encode(b));
}
