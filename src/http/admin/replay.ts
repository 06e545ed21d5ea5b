/** `POST /admin/deliveries/:source/:id/replay` and `POST /admin/replay` (bulk, failed only). */
import { createRoute } from "@hono/zod-openapi";
import { ApiError } from "../errors";
import { replayDelivery, replayFailed } from "../../processing/replay";
import { adminRouter, BEARER_SECURITY, errorResponses } from "./router";
import { BulkReplayBodySchema, BulkReplayedSchema, DeliveryParamsSchema, ReplayedSchema, ReplayQuerySchema, ReplayRefusedSchema } from "./schemas";

const replayOneRoute = createRoute({
  method: "post",
  path: "/deliveries/{source}/{id}/replay",
  summary: "Put a failed delivery (or, with force, a done one) back through processing",
  security: BEARER_SECURITY,
  request: { params: DeliveryParamsSchema, query: ReplayQuerySchema },
  responses: {
    202: { description: "reset and enqueued", content: { "application/json": { schema: ReplayedSchema } } },
    ...errorResponses(400, 404),
    409: {
      description: "not replayable: still in flight or done without force (`conflict`), or its body was cleared by retention (`body_pruned`)",
      content: { "application/json": { schema: ReplayRefusedSchema } },
    },
  },
});

const replayFailedRoute = createRoute({
  method: "post",
  path: "/replay",
  summary: "Replay failed deliveries in bulk, a bounded number per call",
  security: BEARER_SECURITY,
  request: { body: { required: true, content: { "application/json": { schema: BulkReplayBodySchema } } } },
  responses: {
    200: { description: "how many were replayed and how many failed ones are left", content: { "application/json": { schema: BulkReplayedSchema } } },
    ...errorResponses(400),
  },
});

export const replayRoutes = adminRouter()
  .openapi(replayOneRoute, async (c) => {
    const { source, id } = c.req.valid("param");
    const { force, subscriber } = c.req.valid("query");
    const ref = subscriber === undefined ? { source, id } : { source, id, subscriber };
    const result = await replayDelivery(c.env, ref, { force: force === "true" });
    if (result.kind === "not_found") throw new ApiError(404, "not_found", subscriber === undefined ? `no delivery ${source}/${id}` : `no run of ${source}/${id} for subscriber ${subscriber}`);
    if (result.kind === "body_pruned") {
      throw new ApiError(409, "body_pruned", `the body of delivery ${ref.source}/${ref.id} was cleared by retention; it cannot be replayed`);
    }
    if (result.kind === "conflict") {
      const hint = result.status === "done" ? "; add ?force=true to run its handler again" : "; it is still in flight";
      throw new ApiError(409, "conflict", `delivery ${ref.source}/${ref.id} is ${result.status}${hint}`);
    }
    return c.json({ status: "replayed" as const, source, id, ...(subscriber === undefined ? {} : { subscriber }) }, 202);
  })
  .openapi(replayFailedRoute, async (c) => {
    const { source, subscriber, eventType, since, until, limit } = c.req.valid("json");
    return c.json(await replayFailed(c.env, { source, subscriber, eventType, since, until, limit }), 200);
  });
