/**
 * The admin API's gate: `Authorization: Bearer <ADMIN_TOKEN>`, closed unless a token is set.
 *
 * Hono's `bearerAuth` would answer 400 for a malformed header and render its own error body; the
 * admin API answers every refusal with 401 and the inbox's one JSON error shape instead, so this
 * is the same check written against `ApiError`.
 */
import type { MiddlewareHandler } from "hono";
import { timingSafeEqual } from "hono/utils/buffer";
import { ApiError } from "../errors";
import type { AppEnv } from "../types";

const BEARER = /^Bearer[ \t]+(\S+)[ \t]*$/i;

/**
 * Refuses the request unless it carries the admin token: 503 `admin_disabled` while ADMIN_TOKEN is
 * unset or empty (closed by default), 401 `unauthorized` for a missing, malformed or wrong token.
 * @example
 * admin.use("*", adminAuth());
 */
export function adminAuth(): MiddlewareHandler<AppEnv> {
  return async function adminAuth(c, next) {
    const expected = c.get("config").adminToken;
    if (expected === undefined) {
      throw new ApiError(503, "admin_disabled", "the admin API is disabled: set the ADMIN_TOKEN secret to enable it");
    }
    const presented = BEARER.exec(c.req.header("authorization") ?? "")?.[1];
    // Constant-time (on SHA-256 digests): a timing leak would reveal the token byte by byte.
    if (presented === undefined || !(await timingSafeEqual(presented, expected))) {
      throw new ApiError(401, "unauthorized", "missing or wrong admin token (Authorization: Bearer <ADMIN_TOKEN>)", {
        "WWW-Authenticate": 'Bearer realm="webhook-inbox admin"',
      });
    }
    await next();
  };
}
