/** Alerting's rows as both stores read them (store/d1/alerts.ts, store/postgres/alerts.ts), and the marks they share. */
import { isoTime } from "./clock";
import type { IncidentRecord, MessageStatus, OutboxMessage } from "./alerts";

/** The `inbox_marks` rows: the alerting state (JSON), whose evaluation's turn it is, the heartbeats. */
export const ALERT_STATE_MARK = "alerts";
export const ALERT_TURN_MARK = "alerts_turn";
export const HEARTBEAT_MARK_PREFIX = "heartbeat:";

/**
 * The `alert_failure_totals` rows as the readings give them: a source's failed deliveries (its
 * row with subscriber ''), and each subscriber's failures.
 */
export function failureTotals(rows: readonly { source: string; subscriber: string; failed_ever: number }[]): {
  failedEver: Record<string, number>;
  failedEverBySubscriber: Record<string, Record<string, number>>;
} {
  const failedEver: Record<string, number> = {};
  const failedEverBySubscriber: Record<string, Record<string, number>> = {};
  for (const row of rows) {
    if (row.subscriber === "") failedEver[row.source] = row.failed_ever;
    else (failedEverBySubscriber[row.source] ??= {})[row.subscriber] = row.failed_ever;
  }
  return { failedEver, failedEverBySubscriber };
}


export interface IncidentRow {
  id: number;
  key: string;
  rule: string;
  source: string | null;
  subscriber: string | null;
  error_key: string | null;
  status: "open" | "resolved";
  summary: string;
  count: number;
  since: string;
  opened_at: string;
  notified_at: string;
  last_seen_at: string;
  resolved_at: string | null;
}

export interface MessageRow {
  id: number;
  incident_id: number;
  kind: OutboxMessage["kind"];
  channel: string;
  body: string;
  status: MessageStatus;
  attempts: number;
  created_at: string;
  next_at: string;
  sent_at: string | null;
  last_error: string | null;
}

export const incidentFromRow = (row: IncidentRow): IncidentRecord => ({
  id: Number(row.id),
  key: row.key,
  rule: row.rule,
  source: row.source,
  subscriber: row.subscriber,
  errorKey: row.error_key,
  status: row.status,
  summary: row.summary,
  count: Number(row.count),
  since: row.since,
  openedAt: row.opened_at,
  notifiedAt: row.notified_at,
  lastSeenAt: row.last_seen_at,
  resolvedAt: row.resolved_at,
});

export const messageFromRow = (row: MessageRow): OutboxMessage => ({
  id: Number(row.id),
  incidentId: Number(row.incident_id),
  kind: row.kind,
  channel: row.channel,
  body: row.body,
  status: row.status,
  attempts: Number(row.attempts),
  createdAt: row.created_at,
  nextAt: row.next_at,
  sentAt: row.sent_at,
  lastError: row.last_error,
});

/** The minute of `ms` as `alert_signature_failures` keys it. */
export const minuteKey = (ms: number) => isoTime(ms).slice(0, 16);

