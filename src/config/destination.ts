/**
 * A forward destination, and the checks every one passes, whether it comes from the vars
 * (`<SOURCE>_FORWARD_URL`, forwarding.ts) or from a `forward({ url, secret })` handler
 * (forwarding/forward.ts).
 *
 * Each check returns a problem in words, never the value: problems reach `GET /health`, the logs
 * and, for a handler's options, the thrown error. A destination is only built from values that
 * passed every check, so the code that sends never has to doubt it.
 */
import { fromBase64 } from "../base64";

/** Where deliveries go, and how. */
export interface ForwardDestination {
  /** An absolute http(s) URL, checked by `checkForwardUrl`. */
  readonly url: string;
  /** The Standard Webhooks signing key: the bytes after `whsec_`, decoded. */
  readonly key: Uint8Array;
  /** How long one request may take, response head and the start of its body included. */
  readonly timeoutSeconds: number;
  /** Requests in flight to this destination's origin at once, across every isolate (limiter.ts). */
  readonly concurrency: number;
  /** Its retry schedule: attempts in all, and the first backoff (doubled each retry). The inbox's by default. */
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  /** When its circuit breaker opens, and for how long at first (forwarding/breaker.ts). */
  readonly breaker: BreakerSettings;
  /** Its `_FILTER` var as written (JSON), or null: parsed and checked by the filters, not here. */
  readonly filterJson: string | null;
}

/** A destination's circuit breaker settings. */
export interface BreakerSettings {
  /** Failures in a row (network errors, timeouts, 5xx, 408, 429) that open it. */
  readonly failures: number;
  /** How long it stays open the first time; doubled while probes keep failing, up to BREAKER_MAX_OPEN_SECONDS. */
  readonly openSeconds: number;
}

/** Five failures in a row: a blip (one 503, one reset connection) never opens it. */
export const DEFAULT_BREAKER_FAILURES = 5;
export const MAX_BREAKER_FAILURES = 1_000;
/** The first open period: short enough that a restart of the backend costs little. */
export const DEFAULT_BREAKER_OPEN_SECONDS = 30;
/** The longest open period, however long the probes keep failing: a backend back is found within it. */
export const BREAKER_MAX_OPEN_SECONDS = 600;
export const DEFAULT_BREAKER: BreakerSettings = { failures: DEFAULT_BREAKER_FAILURES, openSeconds: DEFAULT_BREAKER_OPEN_SECONDS };

/** A request that takes longer is abandoned as a retryable failure. */
export const DEFAULT_TIMEOUT_SECONDS = 30;
/** Requests in flight at once per destination: enough for a backend's pool, few enough for a drained backlog. */
export const DEFAULT_CONCURRENCY = 10;
export const MAX_CONCURRENCY = 1_000;

/**
 * Hosts that may be reached over plain http: this machine only (a local backend under `wrangler
 * dev`): localhost and its subdomains (*.localhost), the loopback block 127.0.0.0/8, and [::1].
 * LOCAL_HOSTS says the same in words.
 */
const LOCAL_HOSTS = "localhost, *.localhost, 127.0.0.0/8 or [::1]";

function isLocalHost(hostname: string): boolean {
  return hostname === "localhost" || hostname.endsWith(".localhost") || hostname === "[::1]" || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/**
 * The destination URL, or a problem. https only, except for this machine (http:// to
 * LOCAL_HOSTS); no user name or password in it: a credential in a URL ends up in logs, and
 * the request is signed anyway.
 * @example
 * checkForwardUrl("https://billing.example.com/webhooks"); // { ok: true, url: "https://billing.example.com/webhooks" }
 * checkForwardUrl("http://billing.example.com/webhooks"); // { ok: false, problem: "must be an https:// URL …" }
 */
export function checkForwardUrl(text: string): { ok: true; url: string } | { ok: false; problem: string } {
  const https = `must be an absolute https:// URL (http:// only for ${LOCAL_HOSTS})`;
  let url: URL;
  try {
    url = new URL(text.trim());
  } catch {
    return { ok: false, problem: https };
  }
  if (url.protocol !== "https:" && !(url.protocol === "http:" && isLocalHost(url.hostname))) return { ok: false, problem: https };
  if (url.username !== "" || url.password !== "") {
    return { ok: false, problem: "must not contain a user name or password (the forwarded request is signed instead)" };
  }
  return { ok: true, url: url.toString() };
}

const SECRET_PREFIX = "whsec_";
/** The Standard Webhooks spec: signing secrets are 24 to 64 random bytes. */
const MIN_KEY_BYTES = 24;
const MAX_KEY_BYTES = 64;

/**
 * The signing key of a `whsec_…` secret, or a problem.
 * @example
 * checkForwardSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"); // { ok: true, key: Uint8Array(24) }
 */
export function checkForwardSecret(text: string): { ok: true; key: Uint8Array } | { ok: false; problem: string } {
  const shape = `must be a Standard Webhooks secret: ${SECRET_PREFIX} followed by the base64 of ${MIN_KEY_BYTES} to ${MAX_KEY_BYTES} random bytes`;
  const trimmed = text.trim();
  if (!trimmed.startsWith(SECRET_PREFIX)) return { ok: false, problem: shape };
  const key = fromBase64(trimmed.slice(SECRET_PREFIX.length));
  if (!key || key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) return { ok: false, problem: shape };
  return { ok: true, key };
}

/** The settings a request timeout must stay under. */
export interface TimeoutLimits {
  readonly leaseSeconds: number;
  readonly handlerTimeoutSeconds: number;
}

/**
 * A problem when `timeoutSeconds` is not well under the lease and inside the handler's deadline,
 * else null (it names the vars, never their values, like every config problem). At most half of LEASE_SECONDS: the lease is renewed every third of it while a
 * request runs, so even a renewal that fails leaves the request well inside its lease, and a
 * second worker never sends the same delivery while the first still waits for an answer. Under
 * HANDLER_TIMEOUT_SECONDS, because the forward runs within the handler's deadline.
 */
export function timeoutProblem(timeoutSeconds: number, limits: TimeoutLimits): string | null {
  if (timeoutSeconds * 2 > limits.leaseSeconds) return "the forward timeout must be at most half of LEASE_SECONDS";
  if (timeoutSeconds >= limits.handlerTimeoutSeconds) return "the forward timeout must be shorter than HANDLER_TIMEOUT_SECONDS";
  return null;
}
