/**
 * The dashboard's response headers and request checks, applied to every `/ui` route.
 *
 * - A strict Content-Security-Policy: scripts only with this response's nonce (the one script
 *   tag is ours), styles and images only from the Worker, nothing may frame a page
 *   (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for older browsers), forms post only
 *   here. Delivery data is escaped by JSX; the policy is the second wall if that ever failed.
 * - `Cache-Control: no-store`: pages show personal data and must not be kept by a browser or a proxy.
 * - `Referrer-Policy: same-origin`: a delivery's id in a URL never leaves for another site, while
 *   the browser still sends `Origin` on our own form posts (with `no-referrer` it would send `null`).
 * - CSRF: every POST must come from a page of this origin (Hono's `csrf()`: `Sec-Fetch-Site` or
 *   `Origin`), and must be a form: a body of another type is refused before `csrf()` (which only
 *   judges the types a cross-site form can send) could let it through.
 */
import type { MiddlewareHandler } from "hono";
import { bodyLimit } from "hono/body-limit";
import { csrf } from "hono/csrf";
import { HTTPException } from "hono/http-exception";
import { NONCE, secureHeaders } from "hono/secure-headers";
import type { AppEnv } from "../types";

/** The policy, also sent by the error page rendered outside these middlewares (errors.tsx). */
export const CONTENT_SECURITY_POLICY = {
  defaultSrc: ["'none'"],
  scriptSrc: [NONCE],
  styleSrc: ["'self'"],
  imgSrc: ["'self'"],
  connectSrc: ["'self'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
  baseUri: ["'none'"],
};

/** Security headers with a fresh script nonce per response (read it with `c.get("secureHeadersNonce")`). */
export function dashboardHeaders(): MiddlewareHandler<AppEnv> {
  return secureHeaders({
    contentSecurityPolicy: CONTENT_SECURITY_POLICY,
    xFrameOptions: "DENY",
    referrerPolicy: "same-origin",
  });
}

/** `Cache-Control: no-store` on every response, errors and redirects included. */
export function noStore(): MiddlewareHandler<AppEnv> {
  return async function noStore(c, next) {
    await next();
    c.res.headers.set("Cache-Control", "no-store");
  };
}

const FORM_TYPE = /^(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;

/** The dashboard's forms are a few fields: a larger body is refused before anything reads it. */
export const MAX_FORM_BYTES = 16 * 1024;

/**
 * Refuses a POST that is not a form of this origin: 415 for another body type, 403 cross-site,
 * 413 past MAX_FORM_BYTES (checked before sign-in or anything else parses it: CSRF is not
 * authentication, and anyone can send any Origin).
 */
export function formPostsFromHere(): MiddlewareHandler<AppEnv> {
  const sameOrigin = csrf();
  const limited = bodyLimit({
    maxSize: MAX_FORM_BYTES,
    onError: () => {
      throw new HTTPException(413, { message: "the form is too large" });
    },
  });
  return async function formPostsFromHere(c, next) {
    if (c.req.method !== "POST") return next();
    if (!FORM_TYPE.test(c.req.header("content-type") ?? "")) throw new HTTPException(415, { message: "the dashboard takes forms only" });
    return sameOrigin(c, async () => {
      await limited(c, next);
    });
  };
}
