/**
 * Verification keys asked of a provider's API by `kid` (the jwt kind's `keyApi`: Plaid's
 * `/webhook_verification_key/get`, which wants the account's client id and secret). The request
 * goes only to an allow-listed https host (or a test's loopback host), as a POST bounded by
 * OUTBOUND_TIMEOUT_MS, never following a redirect; its answer is read only as a public JWK.
 *
 * Keys are cached per isolate by URL and `kid` for CACHE_MS, so a key the provider marks expired
 * stops verifying within that time; a failed lookup is not cached (the next request asks again).
 * Lookups of keys not in the cache are limited per isolate and minute: a flood of tokens naming
 * made-up `kid`s cannot make the inbox hammer the provider's API with the user's credentials (and
 * get them rate-limited). The secret goes only into the request body, never into a log or an error.
 */
import type { JWK } from "jose";
import type { VerifyContext } from "../../types";
import type { KeyApi } from "../declaration";
import { isAllowedUrl, postAllowed } from "../outbound";

/** How long a fetched key is trusted before it is asked for again (Plaid may mark a key expired). */
export const KEY_CACHE_MS = 15 * 60_000;
/** Keys kept at most; the oldest goes first. */
const MAX_CACHED_KEYS = 64;
/** Lookups of uncached keys per isolate within any 60 seconds. */
export const MAX_KEY_LOOKUPS_PER_MINUTE = 10;
/** An answer larger than this is not a key. */
const MAX_ANSWER_CHARS = 65_536;

export interface FoundKey {
  readonly jwk: JWK;
  /** The secret the API accepted (0 the current one, 1 the previous one). */
  readonly matchedSecret: number;
}

const cache = new Map<string, { readonly at: number; readonly found: Promise<FoundKey | string> }>();
/** When the recent lookups of uncached keys started (a sliding minute). */
let lookups: number[] = [];

/** Forgets every cached key and lookup count (tests start from a cold isolate). */
export function clearKeyCache(): void {
  cache.clear();
  lookups = [];
}

function jsonAt(value: unknown, path: string): unknown {
  let current = value;
  for (const key of path.split(".")) {
    if (current === null || typeof current !== "object" || Array.isArray(current)) return undefined;
    current = (current as Record<string, unknown>)[key];
  }
  return current;
}

/** The public JWK in an answer, or why not: an EC P-256 key (Plaid's ES256) not marked expired. */
function publicKeyOf(api: KeyApi, answer: unknown, kid: string): JWK | string {
  const key = jsonAt(answer, api.keyPath);
  if (key === null || typeof key !== "object" || Array.isArray(key)) return "the key API answered no key";
  const jwk = key as Record<string, unknown>;
  if (jwk.kid !== undefined && jwk.kid !== kid) return "the key API answered another key";
  if (api.expiredField && jwk[api.expiredField] !== null && jwk[api.expiredField] !== undefined) return "the token's key has expired";
  if (jwk.kty !== "EC" || jwk.crv !== "P-256" || typeof jwk.x !== "string" || typeof jwk.y !== "string" || "d" in jwk) return "the key API answered an unusable key";
  return { kty: "EC", crv: "P-256", x: jwk.x, y: jwk.y, ...(typeof jwk.alg === "string" ? { alg: jwk.alg } : {}) };
}

/** Asks the API for `kid` with each secret in turn (a rotation: the previous one may still be the valid one). */
async function lookUp(api: KeyApi, url: string, kid: string, secrets: readonly string[], context: VerifyContext): Promise<FoundKey | string> {
  let reason = "the key API refused the lookup";
  for (const [index, secret] of secrets.entries()) {
    const body = api.request(kid, secret, context);
    if (body === null) return "a setting the key API needs is missing";
    let response: Response;
    try {
      response = await postAllowed(url, body);
    } catch {
      return "the key API could not be reached";
    }
    const text = await response.text().catch(() => "");
    // Plaid answers 400 for an unknown key id, and for credentials it does not know (try the next secret).
    if (response.status !== 200) {
      reason = response.status >= 500 ? "the key API failed" : `the key API refused the lookup (${response.status})`;
      if (response.status >= 500 || (response.status >= 300 && response.status < 400)) return reason;
      continue;
    }
    if (text.length > MAX_ANSWER_CHARS) return "the key API's answer is too large";
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      return "the key API's answer is not JSON";
    }
    const jwk = publicKeyOf(api, answer, kid);
    return typeof jwk === "string" ? jwk : { jwk, matchedSecret: index };
  }
  return reason;
}

/**
 * The key for `kid`, from the cache or the API; a string says why there is none.
 * @example
 * const found = await keyFromApi(plaidKeyApi, header.kid, secrets, context, Date.now());
 * if (typeof found !== "string") await importJWK(found.jwk, "ES256");
 */
export async function keyFromApi(api: KeyApi, kid: string, secrets: readonly string[], context: VerifyContext, nowMs: number): Promise<FoundKey | string> {
  const url = (api.urlSetting && context.setting(api.urlSetting)) || api.url(context);
  if (!url) return "the key API's environment setting is not valid";
  if (!isAllowedUrl(url, api.allowedHosts, context.testHosts)) return "the key API's URL is not on the allow-list";
  const cacheKey = JSON.stringify([url, kid]);
  const cached = cache.get(cacheKey);
  if (cached && nowMs - cached.at < KEY_CACHE_MS) {
    const found = await cached.found;
    // A key found with a secret no longer configured is asked for again.
    if (typeof found !== "string" && found.matchedSecret < secrets.length) return found;
  }
  lookups = lookups.filter((at) => nowMs - at < 60_000);
  if (lookups.length >= MAX_KEY_LOOKUPS_PER_MINUTE) return "too many key lookups this minute";
  lookups.push(nowMs);
  const found = lookUp(api, url, kid, secrets, context);
  // Concurrent requests naming the same kid share one lookup; a failure is forgotten once settled.
  cache.set(cacheKey, { at: nowMs, found });
  if (cache.size > MAX_CACHED_KEYS) cache.delete(cache.keys().next().value!);
  const result = await found;
  if (typeof result === "string" && cache.get(cacheKey)?.found === found) cache.delete(cacheKey);
  return result;
}
