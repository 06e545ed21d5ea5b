/**
 * The admin API, mounted at `/admin`: stats, listing, one delivery, replay, Prometheus metrics, sources, incidents, and its own OpenAPI
 * document. Every route, the document included, is behind the admin token (./auth.ts): the
 * document names no secrets, but closed by default is simpler to reason about than a list of
 * exceptions.
 */
import { adminAuth } from "./auth";
import { deliveryRoutes } from "./deliveries";
import { incidentRoutes } from "./incidents";
import { metricsRoutes } from "./metrics";
import { replayRoutes } from "./replay";
import { adminRouter } from "./router";
import { sourceRoutes } from "./sources";
import { statsRoutes } from "./stats";

export const admin = adminRouter();

admin.use("*", adminAuth());
admin.route("/", statsRoutes);
admin.route("/", deliveryRoutes);
admin.route("/", replayRoutes);
admin.route("/", metricsRoutes);
admin.route("/", sourceRoutes);
admin.route("/", incidentRoutes);

admin.openAPIRegistry.registerComponent("securitySchemes", "AdminToken", {
  type: "http",
  scheme: "bearer",
  description: "the ADMIN_TOKEN secret",
});

// Generated from the schemas the routes validate with. Paths are relative to /admin.
admin.doc31("/openapi.json", (c) => ({
  openapi: "3.1.0",
  info: {
    title: "webhook-inbox admin API",
    version: "1",
    description: "Inspect and replay deliveries. Every route needs `Authorization: Bearer <ADMIN_TOKEN>`.",
  },
  servers: [{ url: `${new URL(c.req.url).origin}/admin` }],
}));
