/**
 * What a destination's answer means for the delivery:
 *
 * - 2xx: delivered (the delivery is done);
 * - 408, 429, 5xx: the destination is busy or broken for now: retried with the inbox's backoff,
 *   or after its `Retry-After` (seconds or an HTTP date) if that is longer;
 * - 3xx: refused: a redirect is never followed (a signed delivery must not be re-sent to a URL
 *   nobody configured), and following it next time would not be either;
 * - any other 4xx: refused: the backend says this delivery can never work. Failed at once, with
 *   the status and the first bytes of its answer as the error; replay it once the backend is fixed.
 *
 * Only the start of a response body is ever read: enough for an error message, never a large
 * answer held in memory.
 */

/** What one forwarded request came to. */
export type ForwardResult =
  | { readonly kind: "delivered"; readonly status: number }
  | { readonly kind: "retry"; readonly reason: string; readonly retryAfterSeconds: number | null }
  | { readonly kind: "rejected"; readonly reason: string };

/** How much of an error answer is kept in the delivery's error. */
export const ERROR_BODY_CHARS = 200;
const ERROR_BODY_BYTES = 1_024;
/** How much of a reason phrase (`statusText`) is kept: the standard ones are far shorter. */
export const STATUS_TEXT_CHARS = 64;

/**
 * `text` from a backend as one line of at most `maxChars` characters, for the delivery's error:
 * runs of whitespace and control characters become one space, and format characters (`\p{Cf}`:
 * bidi overrides such as U+202E, zero-width characters) are removed, so that what the admin API,
 * the dashboard and the CLI show cannot be reordered or hidden by the backend's answer.
 */
export function oneLine(text: string, maxChars: number): string {
  const line = text.replace(/\p{Cf}+/gu, "").replace(/[\s\p{Cc}]+/gu, " ").trim();
  return line.length > maxChars ? `${line.slice(0, maxChars)}…` : line;
}

/** Statuses worth trying again: the request timed out there, too many requests, the server's trouble. */
function isRetryable(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/**
 * `Retry-After` in seconds from `nowMs`: delta-seconds or an HTTP date (RFC 9110 §10.2.3); null
 * when absent or unreadable. A date in the past is 0.
 * @example
 * parseRetryAfter("120", now); // 120
 * parseRetryAfter(new Date(now + 30_000).toUTCString(), now); // 30
 */
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
  if (value === null) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // Only a date that names a day and a time: Date.parse alone reads "7" or "1.5" as years.
  if (!/\d{1,2}:\d{2}:\d{2}/.test(text)) return null;
  const atMs = Date.parse(text);
  return Number.isNaN(atMs) ? null : Math.max(0, Math.ceil((atMs - nowMs) / 1000));
}

/**
 * The first bytes of a body as one line of text, at most ERROR_BODY_CHARS characters; the rest
 * is never read. A body that fails midway gives what had arrived.
 */
export async function readStart(response: Response): Promise<string> {
  const reader = response.body?.getReader();
  if (!reader) return "";
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  try {
    while (bytes < ERROR_BODY_BYTES) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      bytes += value.byteLength;
    }
  } catch {
    // Timed out or cut off: keep what arrived.
  } finally {
    reader.cancel().catch(() => {});
  }
  const all = new Uint8Array(bytes);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return oneLine(new TextDecoder().decode(all.subarray(0, ERROR_BODY_BYTES)), ERROR_BODY_CHARS);
}

/**
 * `503 Service Unavailable`, or the bare status when the reason phrase is empty (HTTP/2). The
 * phrase is the backend's own text: cleaned and clipped like the body.
 */
function statusLine(response: Response): string {
  const reason = oneLine(response.statusText, STATUS_TEXT_CHARS);
  return reason ? `${response.status} ${reason}` : String(response.status);
}

/** Where a redirect points, without its query (which may carry a token): for the error message. */
function redirectTarget(response: Response, requestUrl: string): string {
  const location = response.headers.get("location");
  if (!location) return "no Location";
  try {
    const url = new URL(location, requestUrl);
    return `to ${url.origin}${url.pathname}`;
  } catch {
    return "to an unreadable Location";
  }
}

/**
 * What `response` (to a request sent to `requestUrl`) means for the delivery. Consumes or
 * cancels its body either way.
 */
export async function judgeResponse(response: Response, requestUrl: string, nowMs: number): Promise<ForwardResult> {
  const { status } = response;
  if (status >= 200 && status < 300) {
    await response.body?.cancel().catch(() => {});
    return { kind: "delivered", status };
  }
  if (status >= 300 && status < 400) {
    await response.body?.cancel().catch(() => {});
    return {
      kind: "rejected",
      reason: `the forward destination answered ${statusLine(response)}, a redirect ${redirectTarget(response, requestUrl)}: redirects are not followed (a signed delivery is never sent to a URL that was not configured); set the forward URL to the final address`,
    };
  }
  const start = await readStart(response);
  const reason = `the forward destination answered ${statusLine(response)}${start ? `: ${start}` : ""}`;
  if (status >= 400 && status < 500 && !isRetryable(status)) return { kind: "rejected", reason };
  return { kind: "retry", reason, retryAfterSeconds: parseRetryAfter(response.headers.get("retry-after"), nowMs) };
}
