/**
 * An alert message as every channel renders it: what is wrong, since when, how many, and a link to
 * the dashboard's filtered list. Made when an incident opens, is recalled or resolves, and stored
 * in the outbox as it is (the channels format it when they send).
 */
import type { MessageKind } from "./incidents";
import type { RuleName } from "./condition";

export interface AlertMessage {
  readonly kind: MessageKind;
  readonly incidentId: number;
  readonly rule: RuleName;
  readonly source: string | null;
  readonly subscriber: string | null;
  /** One line (a handler's error text may be in it: every channel escapes it). */
  readonly summary: string;
  readonly count: number;
  /** ISO times. */
  readonly since: string;
  readonly resolvedAt: string | null;
  /** The dashboard's list of what the incident is about; null without PUBLIC_BASE_URL. */
  readonly link: string | null;
  /** The incident's page on the dashboard; null without PUBLIC_BASE_URL. */
  readonly incidentLink: string | null;
}

/** The rules in words, for titles. */
export const RULE_TITLES: Record<RuleName, string> = {
  delivery_failed: "Deliveries failed",
  failure_rate: "Failure rate high",
  backlog_age: "Backlog is ageing",
  signature_failures: "Signature failures",
  breaker_open: "Forward destination down",
  heartbeat: "A part stopped",
  database_size: "Database near its size limit",
};

const KIND_WORDS: Record<MessageKind, string> = { opened: "Opened", reminder: "Still open", resolved: "Resolved" };

/**
 * The title: state, rule and what it concerns.
 * @example
 * messageTitle({ kind: "opened", rule: "delivery_failed", source: "stripe", subscriber: null, … }); // "Opened: Deliveries failed (stripe)"
 */
export function messageTitle(message: AlertMessage): string {
  const about = [message.source, message.subscriber].filter((part) => part !== null).join(" / ");
  return `${KIND_WORDS[message.kind]}: ${RULE_TITLES[message.rule]}${about ? ` (${about})` : ""}`;
}

/** The facts every channel lists: since when, how many, and when it resolved. */
export function messageFacts(message: AlertMessage): { name: string; value: string }[] {
  const facts = [
    { name: "Since", value: message.since },
    { name: "How many", value: String(message.count) },
  ];
  if (message.resolvedAt) facts.push({ name: "Resolved", value: message.resolvedAt });
  return facts;
}

/** The message as plain text (email, and each chat's fallback text). */
export function messageText(message: AlertMessage): string {
  const lines = [messageTitle(message), message.summary, ...messageFacts(message).map((fact) => `${fact.name}: ${fact.value}`)];
  if (message.link) lines.push(`Dashboard: ${message.link}`);
  if (message.incidentLink) lines.push(`Incident: ${message.incidentLink}`);
  return lines.join("\n");
}
