/**
 * Outbound fetches a verifier or handshake makes (a signing certificate, a JWKS, a key asked of
 * Plaid's API, SNS's SubscribeURL)
 * go only to hosts a declaration allows, over https. Tests serve their own certificates and keys
 * from a local server: `TEST_ONLY_ALLOWED_HOSTS` may add hosts, but only loopback ones
 * (`127.0.0.1:<port>`, `localhost:<port>`, `[::1]:<port>`), over http or https, so that setting
 * it by mistake in production opens nothing an attacker could serve from.
 */

const LOOPBACK = /^(127\.0\.0\.1|localhost|\[::1\])(:\d{1,5})?$/;

/** The loopback hosts of a `TEST_ONLY_ALLOWED_HOSTS` value (comma-separated); anything else is dropped. */
export function testHosts(value: unknown): string[] {
  if (typeof value !== "string") return [];
  return value
    .split(",")
    .map((host) => host.trim().toLowerCase())
    .filter((host) => LOOPBACK.test(host));
}

/** Whether `url` may be fetched: https to an allowed host, or a test's loopback host. */
export function isAllowedUrl(url: string, allowedHosts: readonly RegExp[], extraHosts: readonly string[]): boolean {
  if (!URL.canParse(url)) return false;
  const parsed = new URL(url);
  if (parsed.username || parsed.password) return false;
  if (extraHosts.includes(parsed.host.toLowerCase()) && (parsed.protocol === "http:" || parsed.protocol === "https:")) return true;
  if (parsed.protocol !== "https:" || parsed.port !== "") return false;
  return allowedHosts.some((pattern) => pattern.test(parsed.hostname));
}

/** Bounded wait for an outbound call: a slow host must not hold a provider's request for long. */
export const OUTBOUND_TIMEOUT_MS = 5_000;

/** GET `url` with a timeout, never following a redirect elsewhere (the allow-list was for this host). */
export async function fetchAllowed(url: string): Promise<Response> {
  return fetch(url, { redirect: "manual", signal: AbortSignal.timeout(OUTBOUND_TIMEOUT_MS) });
}

/** POST a JSON body to `url` with a timeout, never following a redirect (a key API that authenticates with the source's secret). */
export async function postAllowed(url: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    redirect: "manual",
    signal: AbortSignal.timeout(OUTBOUND_TIMEOUT_MS),
  });
}
