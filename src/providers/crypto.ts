/**
 * What the providers share: the limit on a signature header, the timestamp window, reading a JSON
 * body and its fields, and trying each secret of a rotation. The Web Crypto primitives they use are
 * src/crypto.ts's, re-exported here with hex and base64 so that a provider imports from one place.
 */
import { hmac, timingSafeEqual, type HashName } from "../crypto";

export { concat, hmac, sha256, timingSafeEqual, timingSafeEqualText, type HashName } from "../crypto";
export { fromBase64, toBase64 } from "../base64";
export { fromHex, toHex } from "../hex";

/** Signature headers longer than this are refused before any decoding (a cheap DoS guard). */
export const MAX_SIGNATURE_HEADER_LENGTH = 4_096;

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

/**
 * A string field of a JSON object at a dotted path (`data.object.id`; `value.0.clientState` indexes
 * an array), or null; a number or boolean as its text.
 */
export function jsonString(value: unknown, path: string): string | null {
  let current = value;
  for (const key of path.split(".")) {
    if (Array.isArray(current) && /^\d+$/.test(key)) current = current[Number(key)];
    else if (current === null || typeof current !== "object" || Array.isArray(current)) return null;
    else current = (current as Record<string, unknown>)[key];
  }
  if (typeof current === "boolean") return String(current);
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
  return (await matchingSecret(hash, secrets, received, parts)) >= 0;
}

/** The index of the first of `secrets` that `received` matches, or -1; every secret is tried (timing). */
export async function matchingSecret(
  hash: HashName,
  secrets: readonly (string | Uint8Array)[],
  received: readonly Uint8Array[],
  parts: readonly (string | Uint8Array)[],
): Promise<number> {
  let matched = -1;
  for (const [index, secret] of secrets.entries()) {
    const expected = await hmac(hash, secret, ...parts);
    for (const candidate of received) if (timingSafeEqual(candidate, expected) && matched < 0) matched = index;
  }
  return matched;
}

/** `{ matchedSecret }` when a secret other than the current one verified (a rotation), else nothing. */
export function rotated(index: number): { matchedSecret?: number } {
  return index > 0 ? { matchedSecret: index } : {};
}
