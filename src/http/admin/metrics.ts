/**
 * `GET /admin/metrics`: the overview in the Prometheus text exposition format (version 0.0.4),
 * behind the admin token like every admin route. It is served from the overview's snapshot
 * (store/d1/overview.ts), so a scrape every 15 s never counts the table; the snapshot's age is a
 * metric of its own.
 */
import { createRoute, z } from "@hono/zod-openapi";
import type { Overview } from "../../store/snapshot";
import type { AlertCounts } from "../../store";
import { adminRouter, BEARER_SECURITY, errorResponses } from "./router";
import { DELIVERY_STATUSES, openStore, type SubscriberCount } from "../../store";
import { readBreakers, type DestinationBreaker } from "../../forwarding/breakers";

const metricsRoute = createRoute({
  method: "get",
  path: "/metrics",
  summary: "Deliveries by status and source, the oldest waiting, unhandled, duplicates by source, each forward destination's breaker, incidents and alert messages: Prometheus text format",
  security: BEARER_SECURITY,
  responses: {
    200: { description: "the metrics (`text/plain; version=0.0.4`)", content: { "text/plain": { schema: z.string() } } },
    ...errorResponses(),
  },
});

export const metricsRoutes = adminRouter().openapi(metricsRoute, async (c) => {
  const nowMs = Date.now();
  const store = openStore(c.env);
  const [overview, bySubscriber, breakers, alerts] = await Promise.all([store.overview(nowMs), store.failedBySubscriber(), readBreakers(c.env), store.alerts.counts()]);
  const text = renderMetrics(overview, nowMs, bySubscriber, breakers, alerts);
  return c.text(text, 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8", "Cache-Control": "no-store" });
});

/** A label value as the format wants it: backslash, double quote and newline escaped. */
function label(value: string): string {
  return value.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}

/** The exposition text of an overview read at `nowMs`, and of alerting's counts when given. */
export function renderMetrics(
  overview: Overview,
  nowMs: number,
  bySubscriber: readonly SubscriberCount[] = [],
  breakers: readonly DestinationBreaker[] = [],
  alerts?: AlertCounts,
): string {
  const lines: string[] = [];
  const gauge = (name: string, help: string, samples: readonly [string, number][]) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const [labels, value] of samples) lines.push(`${name}${labels} ${value}`);
  };
  gauge(
    "webhook_inbox_deliveries",
    "Deliveries stored, by source and status.",
    Object.entries(overview.bySource)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .flatMap(([source, counts]) => DELIVERY_STATUSES.map((status) => [`{source="${label(source)}",status="${status}"}`, counts[status]] as [string, number])),
  );
  lines.push("# HELP webhook_inbox_duplicates_total Copies answered \"duplicate\" (a provider's retries), by source.", "# TYPE webhook_inbox_duplicates_total counter");
  for (const [source, copies] of Object.entries(overview.duplicatesBySource).sort(([a], [b]) => (a < b ? -1 : 1))) lines.push(`webhook_inbox_duplicates_total{source="${label(source)}"} ${copies}`);
  gauge(
    "webhook_inbox_failed_by_subscriber",
    "Failed deliveries by source and subscriber (a fanned-out delivery counts once per subscriber that failed it).",
    bySubscriber.map(({ source, subscriber, failed }) => [`{source="${label(source)}",subscriber="${label(subscriber)}"}`, failed]),
  );
  gauge("webhook_inbox_oldest_waiting_seconds", "Age of the oldest received or processing delivery; 0 when none waits.", [["", overview.oldestWaitingSeconds ?? 0]]);
  gauge("webhook_inbox_unhandled_deliveries", "Done deliveries that no handler matched.", [["", overview.unhandled]]);
  gauge("webhook_inbox_received_last_24h", "Deliveries received in the last 24 hours.", [["", overview.last24h.received]]);
  gauge("webhook_inbox_failed_last_24h", "Deliveries received in the last 24 hours that are failed now.", [["", overview.last24h.failed]]);
  gauge("webhook_inbox_counts_age_seconds", "How old the counts above are (they are refreshed at most once a minute).", [
    ["", Math.max(0, Math.floor((nowMs - Date.parse(overview.asOf)) / 1000))],
  ]);
  const destination = (breaker: DestinationBreaker) => `source_prefix="${label(breaker.prefix)}",destination="${label(breaker.name)}"`;
  gauge(
    "webhook_inbox_forward_breaker_state",
    "Each configured forward destination's circuit breaker: 1 for the state it is in (closed, open, half-open; unknown when its object could not be asked).",
    breakers.flatMap((breaker) =>
      (["closed", "open", "half-open", "unknown"] as const).map((state) => [`{${destination(breaker)},state="${state}"}`, breaker.status === state ? 1 : 0] as [string, number]),
    ),
  );
  gauge(
    "webhook_inbox_forward_breaker_since_seconds",
    "Since when (Unix time) each forward destination's breaker is in its state; 0 when not known (closed since it was made).",
    breakers.map((breaker) => [`{${destination(breaker)}}`, breaker.sinceMs === null ? 0 : Math.floor(breaker.sinceMs / 1000)]),
  );
  gauge(
    "webhook_inbox_forward_breaker_failures",
    "Failures in a row each forward destination has answered (they open its breaker at its BREAKER_FAILURES).",
    breakers.map((breaker) => [`{${destination(breaker)}}`, breaker.failures]),
  );
  gauge(
    "webhook_inbox_forward_waiting_deliveries",
    "Deliveries each forward destination's limiter knows to be waiting their turn (its breaker open, or no slot free).",
    breakers.map((breaker) => [`{${destination(breaker)}}`, breaker.waiting]),
  );
  if (alerts) {
    gauge(
      "webhook_inbox_incidents_open",
      "Alerting's open incidents, by rule.",
      Object.entries(alerts.openByRule).sort(([a], [b]) => (a < b ? -1 : 1)).map(([rule, n]) => [`{rule="${label(rule)}"}`, n] as [string, number]),
    );
    gauge("webhook_inbox_incidents", "Alerting's incidents kept (open and resolved).", [["", alerts.incidents]]);
    gauge(
      "webhook_inbox_alert_messages",
      "Alert messages by channel and status (pending: not delivered yet, retried; failed: given up).",
      [...alerts.messages].sort((a, b) => (`${a.channel}${a.status}` < `${b.channel}${b.status}` ? -1 : 1)).map((row) => [`{channel="${label(row.channel)}",status="${row.status}"}`, row.n] as [string, number]),
    );
  }
  return `${lines.join("\n")}\n`;
}
