/** `GET /admin/stats`: what is waiting, what failed, per source. */
import { createRoute } from "@hono/zod-openapi";
import { adminRouter, BEARER_SECURITY, errorResponses } from "./router";
import { StatsSchema } from "./schemas";
import { openStore } from "../../store";

const statsRoute = createRoute({
  method: "get",
  path: "/stats",
  summary: "Counts by status and source, and the age of the oldest waiting delivery",
  security: BEARER_SECURITY,
  responses: {
    200: { description: "the counts", content: { "application/json": { schema: StatsSchema } } },
    ...errorResponses(),
  },
});

export const statsRoutes = adminRouter().openapi(statsRoute, async (c) => c.json(await openStore(c.env).stats(Date.now()), 200));
