/** `GET /admin/deliveries` (a page of deliveries) and `GET /admin/deliveries/:source/:id` (one, with its body). */
import { createRoute } from "@hono/zod-openapi";
import { ApiError } from "../errors";
import { decodeCursor, encodeCursor } from "../cursor";
import { adminRouter, BEARER_SECURITY, errorResponses } from "./router";
import { DeliveryDetailSchema, DeliveryListSchema, DeliveryParamsSchema, ListQuerySchema } from "./schemas";
import { openStore, type DeliveryDetail } from "../../store";

const listRoute = createRoute({
  method: "get",
  path: "/deliveries",
  summary: "Deliveries, newest first, filtered by status, source, event type and received time, in pages",
  security: BEARER_SECURITY,
  request: { query: ListQuerySchema },
  responses: {
    200: { description: "one page", content: { "application/json": { schema: DeliveryListSchema } } },
    ...errorResponses(400),
  },
});

const getRoute = createRoute({
  method: "get",
  path: "/deliveries/{source}/{id}",
  summary: "One delivery with its body, request headers and attempt history",
  security: BEARER_SECURITY,
  request: { params: DeliveryParamsSchema },
  responses: {
    200: { description: "the delivery", content: { "application/json": { schema: DeliveryDetailSchema } } },
    ...errorResponses(400, 404),
  },
});

export const deliveryRoutes = adminRouter()
  .openapi(listRoute, async (c) => {
    const { status, source, subscriber, eventType, since, until, unhandled, limit, cursor } = c.req.valid("query");
    const page = await openStore(c.env).list({ status, source, subscriber, eventType, since, until, unhandled, limit, after: cursor ? decodeCursor(cursor)! : undefined });
    return c.json({ deliveries: page.deliveries, nextCursor: page.nextKey ? encodeCursor(page.nextKey) : null }, 200);
  })
  .openapi(getRoute, async (c) => {
    const ref = c.req.valid("param");
    const delivery = await openStore(c.env).get(ref);
    if (!delivery) throw new ApiError(404, "not_found", `no delivery ${ref.source}/${ref.id}`);
    const headers = delivery.headers?.map(([name, value]): [string, string] => [name, value]) ?? null;
    const runs = delivery.runs.map((run) => ({ ...run, attemptLog: [...run.attemptLog] }));
    return c.json({ ...delivery, body: describeBody(delivery.body), headers, attemptLog: [...delivery.attemptLog], runs }, 200);
  });

/** The body as bytes count, base64 always, and text when it is valid UTF-8 (kept byte for byte, BOM included). */
function describeBody(body: DeliveryDetail["body"]) {
  if (body === null) return null;
  let text: string | null;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    text = null;
  }
  let binary = "";
  // In chunks: spreading a 1 MiB array into fromCharCode would overflow the call stack.
  for (let start = 0; start < body.length; start += 0x8000) binary += String.fromCharCode(...body.subarray(start, start + 0x8000));
  return { bytes: body.byteLength, text, base64: btoa(binary) };
}
