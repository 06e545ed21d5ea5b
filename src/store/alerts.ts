/**
 * Alerting's slice of the store (src/alerts; migrations/0015, migrations-postgres/0008): the
 * counters its rules read, the incidents, and the outbox of their messages. Both stores keep the
 * same promises:
 * - `readings` reads small tables and marks only, never the deliveries table;
 * - `applyIncidents` applies one evaluation in one transaction, and only when the evaluation's
 *   turn is still the one it read (`turnBefore`): two sweeps evaluating at once apply one;
 * - `claimDueMessages` claims each due message for one sender (its `next_at` moved ahead), so two
 *   beats never send the same message at once.
 */
import type { FailureGroup } from "./alert-types";

export type { FailureGroup } from "./alert-types";

export interface IncidentRecord {
  readonly id: number;
  readonly key: string;
  readonly rule: string;
  readonly source: string | null;
  readonly subscriber: string | null;
  readonly errorKey: string | null;
  readonly status: "open" | "resolved";
  readonly summary: string;
  readonly count: number;
  /** ISO times. */
  readonly since: string;
  readonly openedAt: string;
  readonly notifiedAt: string;
  readonly lastSeenAt: string;
  readonly resolvedAt: string | null;
}

export type MessageStatus = "pending" | "sent" | "failed";

export interface OutboxMessage {
  readonly id: number;
  readonly incidentId: number;
  readonly kind: "opened" | "reminder" | "resolved";
  readonly channel: string;
  /** The message as JSON (src/alerts/message.ts). */
  readonly body: string;
  readonly status: MessageStatus;
  readonly attempts: number;
  readonly createdAt: string;
  readonly nextAt: string;
  readonly sentAt: string | null;
  readonly lastError: string | null;
}

/** What the rules read besides the overview. */
export interface AlertReadings {
  /** Groups with deliveries failed now. */
  readonly failureGroups: readonly FailureGroup[];
  /** Failed deliveries ever, per source. */
  readonly failedEver: Readonly<Record<string, number>>;
  /** Failures ever per source, by the subscriber that failed. */
  readonly failedEverBySubscriber: Readonly<Record<string, Readonly<Record<string, number>>>>;
  /** Signature failures per source since the time asked for. */
  readonly signatureFailures: Readonly<Record<string, number>>;
  /** Heartbeats by name (ms). */
  readonly heartbeats: Readonly<Record<string, number>>;
  /** The database's size, bytes; null when unknown. */
  readonly databaseBytes: number | null;
  /** The alerting state as last stored (JSON), and its turn. */
  readonly state: string | null;
  readonly turn: string;
}

/** A message to add to the outbox for an incident. */
export interface NewMessage {
  readonly kind: OutboxMessage["kind"];
  readonly channel: string;
  readonly body: string;
}

/** One evaluation's changes (src/alerts/beat.ts makes them from a plan). */
export interface IncidentChanges {
  /** The turn read with the readings; the changes apply only while it is still the one stored. */
  readonly turnBefore: string;
  readonly turn: string;
  /** The state to store (JSON). */
  readonly state: string;
  readonly open: readonly {
    readonly key: string;
    readonly rule: string;
    readonly source: string | null;
    readonly subscriber: string | null;
    readonly errorKey: string | null;
    readonly summary: string;
    readonly count: number;
    readonly sinceMs: number;
    readonly messages: readonly NewMessage[];
  }[];
  readonly keep: readonly { readonly id: number; readonly count: number; readonly summary: string }[];
  readonly remind: readonly { readonly id: number; readonly messages: readonly NewMessage[] }[];
  readonly resolve: readonly { readonly id: number; readonly messages: readonly NewMessage[] }[];
}

/** A message's outcome: sent, or failed with the time of its next try (null: given up). */
export type MessageOutcome = { readonly sent: true } | { readonly sent: false; readonly error: string; readonly nextAtMs: number | null };

/** The counts /admin/metrics shows. */
export interface AlertCounts {
  /** Open incidents per rule. */
  readonly openByRule: Readonly<Record<string, number>>;
  readonly incidents: number;
  /** Messages per channel and status. */
  readonly messages: readonly { readonly channel: string; readonly status: MessageStatus; readonly n: number }[];
}

export interface AlertStore {
  /** The counters, heartbeats and state; signature failures counted from `signaturesSinceMs`. */
  readings(signaturesSinceMs: number): Promise<AlertReadings>;
  openIncidents(): Promise<IncidentRecord[]>;
  /** Applies one evaluation's changes at `nowMs`; false (nothing applied) when another evaluation took the turn. */
  applyIncidents(changes: IncidentChanges, nowMs: number): Promise<boolean>;
  /**
   * Up to `limit` pending messages due at `nowMs`, oldest first, each claimed until `claimUntilMs`;
   * never one behind an older pending message of its channel that is not due (a channel's messages
   * go in order: an incident's "resolved" never before its "opened").
   */
  claimDueMessages(nowMs: number, claimUntilMs: number, limit: number): Promise<OutboxMessage[]>;
  /** Messages claimed but not tried (their channel failed first), due again at `nowMs`, no try counted. */
  releaseMessages(ids: readonly number[], nowMs: number): Promise<void>;
  settleMessage(id: number, outcome: MessageOutcome, nowMs: number): Promise<void>;
  /** Adds `count` signature failures of `source` in the minute of `nowMs`. */
  noteSignatureFailures(source: string, count: number, nowMs: number): Promise<void>;
  /** A part's heartbeat (`cron`, `consumer`) at `nowMs`. */
  noteHeartbeat(name: string, nowMs: number): Promise<void>;
  /** The open incidents, then the most recent others, `limit` in all. */
  listIncidents(limit: number): Promise<IncidentRecord[]>;
  incident(id: number): Promise<IncidentRecord | null>;
  /** The messages of these incidents, oldest first. */
  messagesOf(incidentIds: readonly number[]): Promise<OutboxMessage[]>;
  counts(): Promise<AlertCounts>;
  /** Drops what is older than `beforeMs`: resolved incidents and their messages, signature minutes, idle failure groups. */
  prune(beforeMs: number): Promise<void>;
}
