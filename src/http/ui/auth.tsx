/**
 * Who may see the dashboard: closed while ADMIN_TOKEN is unset (like the admin API), and behind a
 * signed session cookie otherwise (./session.ts). The JSON admin API never reads that cookie: it
 * is scoped to `/ui`, and `/admin` takes the bearer token alone (src/http/admin/auth.ts).
 */
import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "../types";
import { renderPage } from "./layout";
import { query } from "./links";
import { hasSession } from "./session";

/** The admin token, which every route after `dashboardOpen()` may rely on. */
export function adminToken(c: Context<AppEnv>): string {
  const token = c.get("config").adminToken;
  if (token === undefined) throw new Error("the dashboard is closed: ADMIN_TOKEN is unset");
  return token;
}

/** 503 "closed" page while ADMIN_TOKEN is unset or empty, whatever the request. */
export function dashboardOpen(): MiddlewareHandler<AppEnv> {
  return async function dashboardOpen(c, next) {
    if (c.get("config").adminToken !== undefined) return next();
    return renderPage(
      c,
      { title: "Dashboard closed" },
      <>
        <h1>The dashboard is closed</h1>
        <p>
          It opens once the inbox has an admin token: set the <code>ADMIN_TOKEN</code> secret (<code>wrangler secret put ADMIN_TOKEN</code>, or
          a line in <code>.dev.vars</code> locally). The admin API is closed too until then.
        </p>
      </>,
      503,
    );
  };
}

/**
 * Lets a signed-in browser through. Otherwise a GET is sent to the sign-in page, which brings it
 * back here afterwards (`next`); any other method is refused with 401, changing nothing.
 */
export function requireSession(): MiddlewareHandler<AppEnv> {
  return async function requireSession(c, next) {
    if (await hasSession(c, adminToken(c), Date.now())) return next();
    if (c.req.method === "GET" || c.req.method === "HEAD") {
      const url = new URL(c.req.url);
      return c.redirect(`/ui/login${query({ next: url.pathname + url.search })}`, 303);
    }
    return renderPage(
      c,
      { title: "Signed out" },
      <>
        <h1>You are signed out</h1>
        <p>
          Your session ended (it lasts 12 hours, and ends when the admin token changes). Nothing was changed. <a href="/ui/login">Sign in</a> and
          try again.
        </p>
      </>,
      401,
    );
  };
}
