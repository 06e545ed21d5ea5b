/**
 * The `shared-secret` and `url-secret` kinds: the secret itself travels with the request (a header
 * token, HTTP Basic, a query parameter). Nothing is signed; the check is a constant-time equality of
 * SHA-256 digests, so even the secret's length does not leak through timing.
 */
import { jsonString, sha256, timingSafeEqual } from "../../crypto";
import type { SharedSecretScheme, UrlSecretScheme } from "../declaration";
import type { Parsed } from "../values";
import { refused, type SchemeResult } from "./result";

const encoder = new TextEncoder();

async function matchIndex(received: string, secrets: readonly string[]): Promise<number> {
  const digest = await sha256(encoder.encode(received));
  let matched = -1;
  for (const [index, secret] of secrets.entries()) {
    if (timingSafeEqual(digest, await sha256(encoder.encode(secret))) && matched < 0) matched = index;
  }
  return matched;
}

/** The credential as sent: a header's value after its prefix, or Basic's `user:password`. */
function credential(scheme: SharedSecretScheme, parsed: Parsed): string | null {
  if (scheme.from === "basic") {
    const header = parsed.request.headers.get("authorization");
    if (!header?.toLowerCase().startsWith("basic ")) return null;
    try {
      return atob(header.slice(6).trim());
    } catch {
      return null;
    }
  }
  if ("json" in scheme.from) return jsonString(parsed.json, scheme.from.json);
  const value = parsed.request.headers.get(scheme.from.header);
  const prefix = scheme.from.prefix ?? "";
  return value?.startsWith(prefix) ? value.slice(prefix.length) : null;
}

export async function verifySharedSecretScheme(scheme: SharedSecretScheme, parsed: Parsed, secrets: readonly string[]): Promise<SchemeResult> {
  const received = credential(scheme, parsed);
  if (!received) return refused("missing credential");
  if (received.length > 4_096) return refused("credential too long");
  const matchedSecret = await matchIndex(received, secrets);
  return matchedSecret < 0 ? refused("secret mismatch") : { ok: true, matchedSecret, signed: null, timestamp: "" };
}

export async function verifyUrlSecretScheme(scheme: UrlSecretScheme, parsed: Parsed, secrets: readonly string[]): Promise<SchemeResult> {
  const received = URL.canParse(parsed.request.url) ? new URL(parsed.request.url).searchParams.get(scheme.query) : null;
  if (!received) return refused(`missing ${scheme.query} in the URL`);
  if (received.length > 4_096) return refused("credential too long");
  const matchedSecret = await matchIndex(received, secrets);
  return matchedSecret < 0 ? refused("secret mismatch") : { ok: true, matchedSecret, signed: null, timestamp: "" };
}
