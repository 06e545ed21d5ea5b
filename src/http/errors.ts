/**
 * The inbox's HTTP errors and the one place they are rendered.
 *
 * Routes throw; `renderError` (installed as `app.onError`) turns every error into
 * `{"error": "<code>", "message": "<text>"}`. Unknown errors become a bare 500: no stack
 * traces, SQL or secrets ever reach a response.
 */
import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { ConfigError } from "../config";

/** An HTTP error with a stable machine-readable code. */
export class ApiError extends HTTPException {
  constructor(
    status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(status, { message });
  }
}

/** Codes for HTTPExceptions thrown by middleware (which carry only a status). */
const CODE_BY_STATUS: Record<number, string> = {
  400: "bad_request",
  401: "unauthorized",
  404: "not_found",
  405: "method_not_allowed",
  413: "payload_too_large",
  503: "unavailable",
};

/** What a 503 `config_invalid` suggests to a client: a fix takes someone a few minutes. */
const CONFIG_RETRY_AFTER_SECONDS = 300;

/** The error boundary (`app.onError`): every error as `{"error", "message"}`, nothing internal. */
export function renderError(error: Error, c: Context): Response {
  if (error instanceof ApiError) {
    return c.json({ error: error.code, message: error.message }, error.status as ContentfulStatusCode, error.headers);
  }
  if (error instanceof HTTPException) {
    const status = error.status as ContentfulStatusCode;
    return c.json({ error: CODE_BY_STATUS[status] ?? "http_error", message: error.message || "request refused" }, status);
  }
  if (error instanceof ConfigError) {
    // 503, not 500: retryable, so providers keep the delivery and send it again once the var is
    // fixed. The message names the bad vars (never their values), for `wrangler tail`; the
    // response only points at /health, which lists them.
    console.error(error.message);
    return c.json(
      { error: "config_invalid", message: "the inbox configuration is invalid; GET /health names the variables" },
      503,
      { "Retry-After": String(CONFIG_RETRY_AFTER_SECONDS) },
    );
  }
  console.error("unhandled error:", error instanceof Error ? error.name : typeof error, error.message);
  return c.json({ error: "internal_error", message: "internal error" }, 500);
}
