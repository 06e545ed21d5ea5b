/** The Hono app: config, the error boundary, health, the receiver, the admin API, the dashboard. */
import { Hono } from "hono";
import { checkConfig, ConfigError, loadConfig } from "../config";
import { admin } from "./admin";
import { renderError } from "./errors";
import { receiver } from "./receiver";
import type { AppEnv } from "./types";
import { renderUiError, ui } from "./ui";

export const app = new Hono<AppEnv>();

// Before the config middleware, so it can say what is wrong: each bad var and the problem, never
// a value (the route is public). 503 makes load balancers and uptime checks notice.
app.get("/health", (c) => {
  const config = checkConfig(c.env);
  if (config instanceof ConfigError) return c.json({ status: "config_invalid", problems: config.problems }, 503);
  return c.json({ status: "ok" });
});

// Parsed once per env object; a bad var answers every other request 503 `config_invalid`
// (renderError) instead of running with a guessed value.
app.use("*", async (c, next) => {
  c.set("config", loadConfig(c.env));
  await next();
});

// The root of a running inbox is where a newcomer looks first: the dashboard (which asks to sign in).
app.get("/", (c) => c.redirect("/ui", 302));
app.route("/", receiver);
app.route("/admin", admin);
app.route("/ui", ui);

app.notFound((c) => c.json({ error: "not_found", message: "no such route" }, 404));
// The dashboard renders its own errors as pages; this catches those raised before its routes run
// (a bad config). Everything else keeps the JSON error shape.
app.onError((error, c) => (c.req.path === "/ui" || c.req.path.startsWith("/ui/") ? renderUiError(error, c) : renderError(error, c)));
