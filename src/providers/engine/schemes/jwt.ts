/**
 * The `jwt` kind (with `jose`): a token signed by a JWKS fetched from an allow-listed URL (Google
 * Pub/Sub push's OIDC token) or by the shared secret (Netlify's JWS), with its issuer, audience and
 * expiry checked, and, where the provider has one, a claim holding the body's SHA-256, which puts
 * the body under the signature too. Plaid's key is asked of its API by the token's `kid`
 * (key-api.ts).
 */
import { createRemoteJWKSet, decodeProtectedHeader, errors, importJWK, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type ProtectedHeaderParameters } from "jose";
import { sha256, timingSafeEqualText, toHex } from "../../crypto";
import type { VerifyContext } from "../../types";
import type { JwtScheme } from "../declaration";
import { isAllowedUrl } from "../outbound";
import { readValue, type Parsed } from "../values";
import { keyFromApi } from "./key-api";
import { refused, type SchemeResult } from "./result";

/** A key id worth asking an API about: short, plain characters (Plaid's are UUID-like). */
const KID = /^[A-Za-z0-9._-]{1,128}$/;

const jwksByUrl = new Map<string, JWTVerifyGetKey>();

/** A remote key set, cached per URL by jose (keys refetched at most every 30 s on an unknown `kid`). */
function remoteKeys(url: string): JWTVerifyGetKey {
  let keys = jwksByUrl.get(url);
  if (!keys) {
    keys = createRemoteJWKSet(new URL(url), { timeoutDuration: 5_000, cooldownDuration: 30_000 });
    jwksByUrl.set(url, keys);
  }
  return keys;
}

export async function verifyJwtScheme(scheme: JwtScheme, parsed: Parsed, secrets: readonly string[], nowSeconds: number, context: VerifyContext): Promise<SchemeResult> {
  const field = readValue(scheme.token, parsed);
  const prefix = scheme.prefix ?? "";
  if (!field || !field.startsWith(prefix)) return refused("missing token");
  const token = field.slice(prefix.length).trim();
  if (token.length > 16_384) return refused("token too long");
  const audience = scheme.audience === "secret" ? undefined : scheme.audience ? context.setting(scheme.audience.setting) : undefined;
  const options = {
    algorithms: [...scheme.algorithms],
    ...(scheme.issuer ? { issuer: typeof scheme.issuer === "string" ? scheme.issuer : [...scheme.issuer] } : {}),
    ...(audience ? { audience } : {}),
    currentDate: new Date(nowSeconds * 1000),
    clockTolerance: 60,
    ...(scheme.maxAgeSeconds ? { maxTokenAge: scheme.maxAgeSeconds } : {}),
  };
  let payload: JWTPayload | null = null;
  let matchedSecret = -1;
  if ("shared" in scheme.keys) {
    for (const [index, secret] of secrets.entries()) {
      const result = await jwtVerify(token, new TextEncoder().encode(secret), options).catch((error: unknown) => error);
      if (!(result instanceof Error) && matchedSecret < 0) [payload, matchedSecret] = [(result as { payload: JWTPayload }).payload, index];
      else if (result instanceof errors.JWTExpired) return refused("token expired");
    }
  } else if ("keyApi" in scheme.keys) {
    let header: ProtectedHeaderParameters;
    try {
      header = decodeProtectedHeader(token);
    } catch {
      return refused("malformed token");
    }
    // The algorithm is checked before any lookup: a token naming another one costs no API call.
    if (typeof header.alg !== "string" || !scheme.algorithms.includes(header.alg)) return refused("token algorithm not allowed");
    if (typeof header.kid !== "string" || !KID.test(header.kid)) return refused("token names no usable key id");
    const found = await keyFromApi(scheme.keys.keyApi, header.kid, secrets, context, nowSeconds * 1000);
    if (typeof found === "string") return refused(found);
    const key = await importJWK(found.jwk, header.alg).catch(() => null);
    if (key === null) return refused("the key API answered an unusable key");
    const result = await jwtVerify(token, key, options).catch((error: unknown) => error);
    if (result instanceof errors.JWTExpired) return refused("token expired");
    if (result instanceof Error) return refused(`token refused (${result instanceof errors.JOSEError ? result.code : "invalid"})`);
    [payload, matchedSecret] = [(result as { payload: JWTPayload }).payload, found.matchedSecret];
  } else {
    const url = (scheme.keys.jwksSetting && context.setting(scheme.keys.jwksSetting)) || scheme.keys.jwksUrl;
    if (!isAllowedUrl(url, scheme.keys.allowedHosts, context.testHosts)) return refused("the key set's URL is not on the allow-list");
    const result = await jwtVerify(token, remoteKeys(url), options).catch((error: unknown) => error);
    if (result instanceof errors.JWTExpired) return refused("token expired");
    if (result instanceof Error) return refused(`token refused (${result instanceof errors.JOSEError ? result.code : "invalid"})`);
    payload = (result as { payload: JWTPayload }).payload;
    // The audience is the secret: any configured one may match (a rotation).
    if (scheme.audience === "secret") {
      const audiences = typeof payload.aud === "string" ? [payload.aud] : (payload.aud ?? []);
      matchedSecret = secrets.findIndex((secret) => audiences.some((aud) => timingSafeEqualText(aud, secret)));
      if (matchedSecret < 0) return refused("audience mismatch");
    } else matchedSecret = 0;
  }
  if (payload === null || matchedSecret < 0) return refused("signature mismatch");
  // jose leaves a future `iat` alone: a token minted ahead would outlive its window.
  if (typeof payload.iat === "number" && payload.iat > nowSeconds + 60) return refused("token issued in the future");
  // jose's maxTokenAge allows the clock tolerance on top; the provider's limit is exact (Plaid: 5 minutes).
  if (scheme.maxAgeSeconds !== undefined && (typeof payload.iat !== "number" || nowSeconds - payload.iat > scheme.maxAgeSeconds)) return refused("token too old");
  if (scheme.claimSetting) {
    const expected = context.setting(scheme.claimSetting.setting);
    if (expected !== undefined && payload[scheme.claimSetting.claim] !== expected) return refused(`${scheme.claimSetting.claim} claim mismatch`);
  }
  if (scheme.bodyHashClaim) {
    const claimed = payload[scheme.bodyHashClaim];
    if (typeof claimed !== "string" || !timingSafeEqualText(claimed.toLowerCase(), toHex(await sha256(parsed.request.body)))) {
      return refused("the body does not match the token's hash");
    }
  }
  return { ok: true, matchedSecret, signed: scheme.bodyHashClaim ? parsed.request.body : null, timestamp: String(payload.iat ?? "") };
}
