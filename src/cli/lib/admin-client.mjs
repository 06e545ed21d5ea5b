/**
 * The CLI's only way into the inbox: its admin API over HTTP. Every failure becomes an
 * `InboxError` whose message fits on one line and says what to do about it.
 */

/** A failure to show the user as one line; `exitCode` is what the process exits with. */
export class InboxError extends Error {
  /**
   * @param {string} message
   * @param {{ exitCode?: number, status?: number, code?: string }} [details]
   */
  constructor(message, details = {}) {
    super(message);
    this.name = "InboxError";
    this.exitCode = details.exitCode ?? 1;
    this.status = details.status;
    this.code = details.code;
  }
}

/** How long one request may take before the CLI gives up. */
const REQUEST_TIMEOUT_MS = 15_000;

/**
 * @typedef {{ url: string, token: string, fetch?: typeof fetch }} ClientOptions
 * @typedef {{ get(path: string): Promise<any>, post(path: string, body?: unknown): Promise<any> }} AdminClient
 */

/**
 * A client for `<url>/admin`.
 * @param {ClientOptions} options
 * @returns {AdminClient}
 * @example
 * const client = createAdminClient({ url: "http://localhost:8787", token: process.env.INBOX_ADMIN_TOKEN });
 * const stats = await client.get("/stats");
 */
export function createAdminClient({ url, token, fetch: fetchImpl = fetch }) {
  const base = url.replace(/\/+$/, "");
  /** @param {string} method @param {string} path @param {unknown} [body] */
  async function call(method, path, body) {
    /** @type {Record<string, string>} */
    const headers = { authorization: `Bearer ${token}`, accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    let response;
    try {
      response = await fetchImpl(`${base}/admin${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new InboxError(`cannot reach the inbox at ${base}: ${networkReason(error)} (check INBOX_URL or --url)`);
    }
    const text = await response.text();
    let json;
    try {
      json = JSON.parse(text);
    } catch {
      throw new InboxError(`unexpected answer from ${base}: HTTP ${response.status}, not JSON (is INBOX_URL the inbox?)`, { status: response.status });
    }
    if (!response.ok) throw apiError(response.status, json, base);
    return json;
  }
  return { get: (path) => call("GET", path), post: (path, body) => call("POST", path, body) };
}

/**
 * @param {number} status
 * @param {any} json
 * @param {string} base
 */
function apiError(status, json, base) {
  const code = typeof json?.error === "string" ? json.error : "http_error";
  const message = typeof json?.message === "string" ? json.message : `HTTP ${status}`;
  const details = { status, code };
  if (status === 401) return new InboxError(`the admin token was refused by ${base} (401): check INBOX_ADMIN_TOKEN or --token`, details);
  if (code === "admin_disabled") return new InboxError(`the admin API of ${base} is disabled (503): set the ADMIN_TOKEN secret on the worker`, details);
  return new InboxError(`${message} (${status} ${code})`, details);
}

/** @param {unknown} error */
function networkReason(error) {
  if (error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError")) return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  const cause = /** @type {any} */ (error)?.cause;
  const code = cause?.code ?? cause?.errors?.[0]?.code;
  if (code === "ECONNREFUSED") return "connection refused";
  if (code === "ENOTFOUND" || code === "EAI_AGAIN") return "unknown host";
  if (code) return String(code);
  if (cause instanceof Error) return cause.message;
  return error instanceof Error ? error.message : String(error);
}
