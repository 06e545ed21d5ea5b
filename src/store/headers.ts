/**
 * The request headers stored with a delivery, for the dashboard: everything the provider sent
 * except credentials. A header that carries a credential is never stored: the standard ones
 * below, and those a provider declares (`Provider.credentialHeaders`, e.g. GitLab's
 * `X-Gitlab-Token`, which *is* the secret). Signature headers are kept: they are derived from
 * the secret, not the secret, and they are what one looks at when a verification fails.
 */

/** Never stored, whatever the provider. */
export const CREDENTIAL_HEADERS: readonly string[] = [
  "authorization",
  "proxy-authorization",
  "cookie",
  "x-api-key",
  "cf-access-client-secret",
  "cf-access-jwt-assertion",
];

/**
 * A backstop for credentials nobody declared (a custom source's API key header, say): a header
 * whose name says it carries one is not stored either. No provider's signature header matches.
 */
const CREDENTIAL_NAME = /auth|token|secret|password|passwd|api-?key|session|cookie/i;

/** The stored headers' JSON is cut off past this many bytes (UTF-8), so that a row stays far below D1's 2 MB. */
export const MAX_HEADERS_BYTES = 16 * 1024;

/** A stored header list: [name, value] pairs in the order received, names lower-cased. */
export type StoredHeaders = readonly (readonly [string, string])[];

/**
 * The headers to store, as JSON text: all but the credentials (`CREDENTIAL_HEADERS`,
 * `credentialHeaders`, compared case-insensitively, and any name that says it carries one). Past
 * MAX_HEADERS_BYTES the rest is left out and a last pair `["(truncated)", "<n> more headers not
 * stored"]` says so.
 * @example
 * headersToStore(new Headers({ "Stripe-Signature": "t=1,v1=ab", Authorization: "Bearer x" }), []);
 * // '[["stripe-signature","t=1,v1=ab"]]'
 */
export function headersToStore(headers: Headers, credentialHeaders: readonly string[]): string {
  const secret = new Set([...CREDENTIAL_HEADERS, ...credentialHeaders.map((name) => name.toLowerCase())]);
  const kept: [string, string][] = [];
  let bytes = 2;
  let left = 0;
  const encoder = new TextEncoder();
  for (const [name, value] of headers) {
    if (secret.has(name) || CREDENTIAL_NAME.test(name)) continue;
    const size = encoder.encode(JSON.stringify([name, value])).byteLength + 1;
    if (left > 0 || bytes + size > MAX_HEADERS_BYTES) {
      left++;
      continue;
    }
    kept.push([name, value]);
    bytes += size;
  }
  if (left > 0) kept.push(["(truncated)", `${left} more headers not stored`]);
  return JSON.stringify(kept);
}

/** The stored headers of a row, or null when none are (stored before migrations/0008, or cleared by retention). */
export function headersFromColumn(text: string | null): StoredHeaders | null {
  if (text === null) return null;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!Array.isArray(parsed)) return null;
    return parsed.filter((pair): pair is [string, string] => Array.isArray(pair) && pair.length === 2 && typeof pair[0] === "string" && typeof pair[1] === "string");
  } catch {
    return null;
  }
}
