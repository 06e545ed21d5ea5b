/**
 * The dashboard, mounted at `/ui`: server-rendered pages over the store (never over HTTP to
 * `/admin`), in this order of checks:
 * 1. every response: `Cache-Control: no-store` and the security headers (./security.ts);
 * 2. the static assets, public;
 * 3. closed (503) while ADMIN_TOKEN is unset;
 * 4. every POST: a form from this origin (CSRF);
 * 5. sign-in and sign-out, public;
 * 6. everything else behind the session cookie.
 */
import { Hono } from "hono";
import type { AppEnv } from "../types";
import { assets } from "./assets";
import { dashboardOpen, requireSession } from "./auth";
import { renderUiError } from "./errors";
import { renderPage } from "./layout";
import { deliveryRoutes } from "./routes/deliveries";
import { incidentRoutes } from "./routes/incidents";
import { overviewRoutes } from "./routes/overview";
import { replayRoutes } from "./routes/replay";
import { signInRoutes } from "./routes/sign-in";
import { sourceRoutes } from "./routes/sources";
import { dashboardHeaders, formPostsFromHere, noStore } from "./security";

export const ui = new Hono<AppEnv>();

ui.use("*", noStore());
ui.use("*", dashboardHeaders());
ui.route("/assets", assets);
ui.use("*", dashboardOpen());
ui.use("*", formPostsFromHere());
ui.route("/", signInRoutes);
ui.use("*", requireSession());
ui.route("/", overviewRoutes);
ui.route("/", deliveryRoutes);
ui.route("/", replayRoutes);
ui.route("/", sourceRoutes);
ui.route("/", incidentRoutes);
ui.all("*", (c) =>
  renderPage(
    c,
    { title: "Not found", signedIn: true },
    <>
      <h1>No such page</h1>
      <p>
        <a href="/ui">Back to the overview</a>
      </p>
    </>,
    404,
  ),
);
ui.onError(renderUiError);

export { renderUiError };
