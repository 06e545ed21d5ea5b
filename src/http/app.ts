/** The Hono app: config, the error boundary, health, the receiver. */
import { Hono } from "hono";
import { loadConfig } from "../config";
import { admin } from "./admin";
import { renderError } from "./errors";
import { receiver } from "./receiver";
import type { AppEnv } from "./types";

export const app = new Hono<AppEnv>();

// Parsed once per env object; a bad var fails every request with `config_invalid` instead of
// running with a guessed value.
app.use("*", async (c, next) => {
  c.set("config", loadConfig(c.env));
  await next();
});

app.get("/health", (c) => c.json({ status: "ok" }));
app.route("/", receiver);
app.route("/admin", admin);

app.notFound((c) => c.json({ error: "not_found", message: "no such route" }, 404));
app.onError(renderError);
