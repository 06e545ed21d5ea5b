/**
 * The dashboard's static files, served by the Worker itself: one stylesheet, one small script
 * (conveniences only: every page works without it), and the icon. A few KB in all, no build
 * step, no CDN; the Content-Security-Policy allows nothing else.
 */
import { Hono } from "hono";
import type { AppEnv } from "../../types";
import { DASHBOARD_CSS } from "./style";
import { DASHBOARD_JS } from "./script";

export const ASSET_PATHS = {
  css: "/ui/assets/app.css",
  js: "/ui/assets/app.js",
  favicon: "/ui/assets/favicon.svg",
} as const;

const FAVICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1d4ed8"/><path d="M7 17h5l2 3h4l2-3h5v7H7z" fill="#fff"/><path d="M9 8h14l2 7h-6l-2 3h-2l-2-3H7z" fill="#bfdbfe"/></svg>`;

function asset(body: string, type: string) {
  return () => new Response(body, { headers: { "Content-Type": type } });
}

/** `GET /ui/assets/*`: public (the sign-in and closed pages use them too), no delivery data in them. */
export const assets = new Hono<AppEnv>()
  .get("/app.css", asset(DASHBOARD_CSS, "text/css; charset=utf-8"))
  .get("/app.js", asset(DASHBOARD_JS, "text/javascript; charset=utf-8"))
  .get("/favicon.svg", asset(FAVICON_SVG, "image/svg+xml"));
