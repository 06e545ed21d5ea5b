/**
 * `GET /admin/incidents` and `GET /admin/incidents/{id}`: alerting's incidents (src/alerts), the
 * open ones first, then the most recent; each with its timeline: opened, the messages made for it
 * per channel and whether each was delivered, resolved. And the channels configured, by kind and
 * origin only: a Slack or Discord webhook URL's path is a credential, never shown.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { describeChannel } from "../../config/alerts";
import { openStore, type IncidentRecord, type OutboxMessage, type Store } from "../../store";
import { ApiError } from "../errors";
import { adminRouter, BEARER_SECURITY, errorResponses } from "./router";

const MessageSchema = z
  .object({
    id: z.number().int(),
    kind: z.enum(["opened", "reminder", "resolved"]),
    channel: z.string(),
    status: z.enum(["pending", "sent", "failed"]).openapi({ description: "pending: not delivered yet (retried); failed: given up" }),
    attempts: z.number().int(),
    createdAt: z.string(),
    sentAt: z.string().nullable(),
    nextAt: z.string().nullable().openapi({ description: "when a pending message is tried next" }),
    lastError: z.string().nullable(),
  })
  .openapi("AlertMessage");

const IncidentSchema = z
  .object({
    id: z.number().int(),
    rule: z.string(),
    source: z.string().nullable(),
    subscriber: z.string().nullable(),
    errorKey: z.string().nullable(),
    status: z.enum(["open", "resolved"]),
    summary: z.string(),
    count: z.number().int(),
    since: z.string(),
    openedAt: z.string(),
    lastSeenAt: z.string(),
    resolvedAt: z.string().nullable(),
    messages: z.array(MessageSchema),
  })
  .openapi("Incident");

const IncidentsSchema = z
  .object({
    channels: z.array(z.string()).openapi({ description: "the configured channels: kind and origin, never a webhook URL's path" }),
    incidents: z.array(IncidentSchema),
  })
  .openapi("Incidents");

const listRoute = createRoute({
  method: "get",
  path: "/incidents",
  summary: "Alerting's incidents, open first, then the most recent, each with its messages",
  security: BEARER_SECURITY,
  request: { query: z.object({ limit: z.coerce.number().int().min(1).max(200).default(50) }) },
  responses: {
    200: { description: "the incidents", content: { "application/json": { schema: IncidentsSchema } } },
    ...errorResponses(),
  },
});

const oneRoute = createRoute({
  method: "get",
  path: "/incidents/{id}",
  summary: "One incident with its messages",
  security: BEARER_SECURITY,
  request: { params: z.object({ id: z.coerce.number().int().min(1) }) },
  responses: {
    200: { description: "the incident", content: { "application/json": { schema: IncidentSchema } } },
    ...errorResponses(404),
  },
});

/** Incidents with their messages, for the API and the dashboard. */
export async function incidentsWithMessages(store: Store, incidents: IncidentRecord[]) {
  const messages = await store.alerts.messagesOf(incidents.map((incident) => incident.id));
  return incidents.map((incident) => withMessages(incident, messages.filter((message) => message.incidentId === incident.id)));
}

function withMessages(incident: IncidentRecord, messages: OutboxMessage[]) {
  const { key: _key, notifiedAt: _notified, ...shown } = incident;
  return {
    ...shown,
    messages: messages.map(({ id, kind, channel, status, attempts, createdAt, sentAt, nextAt, lastError }) => ({
      id,
      kind,
      channel,
      status,
      attempts,
      createdAt,
      sentAt,
      nextAt: status === "pending" ? nextAt : null,
      lastError,
    })),
  };
}

export const incidentRoutes = adminRouter()
  .openapi(listRoute, async (c) => {
    const store = openStore(c.env);
    const incidents = await incidentsWithMessages(store, await store.alerts.listIncidents(c.req.valid("query").limit));
    return c.json({ channels: c.get("config").alerts.channels.map(describeChannel), incidents }, 200);
  })
  .openapi(oneRoute, async (c) => {
    const store = openStore(c.env);
    const incident = await store.alerts.incident(c.req.valid("param").id);
    if (!incident) throw new ApiError(404, "not_found", "no such incident");
    const [shown] = await incidentsWithMessages(store, [incident]);
    return c.json(shown!, 200);
  });
