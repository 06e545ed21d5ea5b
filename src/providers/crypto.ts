/**
 * Web Crypto helpers shared by the providers: HMAC, strict hex/base64 decoding, constant-time
 * comparison and timestamp windows. No Node crypto: this runs in the Workers runtime.
 */
import { toHex } from "../hex";

export { toHex };

export type HashName = "SHA-256" | "SHA-1";

const encoder = new TextEncoder();

/** Signature headers longer than this are refused before any decoding (a cheap DoS guard). */
export const MAX_SIGNATURE_HEADER_LENGTH = 4_096;

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


export { fromBase64, toBase64 } from "../base64";
export { fromHex } from "../hex";

/**
 * Parses a unix-seconds timestamp header and checks it lies within `toleranceSeconds` of now,
 * in both directions: a far-future timestamp is as suspicious as an old one (it would let a
 * captured request be replayed later). Returns a refusal reason, or null when it is fine.
 */
export function checkTimestamp(value: string | null, nowSeconds: number, toleranceSeconds: number): string | null {
  if (value === null || !/^\d{1,12}$/.test(value.trim())) return "missing or malformed timestamp";
  const timestamp = Number(value.trim());
  if (timestamp < nowSeconds - toleranceSeconds) return "timestamp too old";
  if (timestamp > nowSeconds + toleranceSeconds) return "timestamp in the future";
  return null;
}

/** The third argument V8 passes a JSON.parse reviver (source text access, ES2026): a primitive's text. */
interface ReviverContext {
  readonly source?: string;
}

/**
 * Keeps an integer beyond 2^53 exact: as a number it would lose digits (`12345678901234567890`
 * becomes `…67000`), so two different ids could read the same. Reads the literal's own digits.
 */
function exactIntegers(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== "number" || Number.isSafeInteger(value)) return value;
  const source = context?.source;
  return source !== undefined && /^-?\d+$/.test(source) ? BigInt(source) : value;
}

/** Reads a JSON body, or null when it is not JSON (never throws). Integers beyond 2^53 are `bigint`s. */
export function parseJson(body: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(body), exactIntegers as (key: string, value: unknown) => unknown);
  } catch {
    return null;
  }
}

/** A string field of a JSON object at a dotted path (`data.object.id`), or null; a number as its digits. */
export function jsonString(value: unknown, path: string): string | null {
  let current = value;
  for (const key of path.split(".")) {
    if (current === null || typeof current !== "object" || Array.isArray(current)) return null;
    current = (current as Record<string, unknown>)[key];
  }
  if (typeof current === "string") return current;
  if (typeof current === "number" && Number.isFinite(current)) return String(current);
  if (typeof current === "bigint") return current.toString();
  return null;
}

/** The first of `names` present (and non-empty) in `headers`, or null: for providers that renamed a header. */
export function firstHeader(headers: Headers, ...names: string[]): string | null {
  for (const name of names) {
    const value = headers.get(name);
    if (value) return value;
  }
  return null;
}

/**
 * Whether `received` (already decoded) equals the HMAC of `parts` under any of `secrets`. Every
 * secret is tried even after a match, so the time taken does not reveal which secret matched.
 */
export async function matchesAnySecret(
  hash: HashName,
  secrets: readonly (string | Uint8Array)[],
  received: readonly Uint8Array[],
  parts: readonly (string | Uint8Array)[],
): Promise<boolean> {
  let matched = false;
  for (const secret of secrets) {
    const expected = await hmac(hash, secret, ...parts);
    for (const candidate of received) if (timingSafeEqual(candidate, expected)) matched = true;
  }
  return matched;
}
