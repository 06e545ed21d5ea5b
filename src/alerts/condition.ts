/**
 * What the rules decide and incidents are made of: the rule names, and a condition (something
 * wrong now). Apart from rules.ts so that each rule's own file (breaker.ts) can make conditions
 * without the rules importing it back.
 */

export const RULES = ["delivery_failed", "failure_rate", "backlog_age", "signature_failures", "breaker_open", "heartbeat", "database_size"] as const;
export type RuleName = (typeof RULES)[number];

/** Something wrong now: what an incident is about while it lasts. */
export interface Condition {
  readonly rule: RuleName;
  readonly source: string | null;
  readonly subscriber: string | null;
  /** What distinguishes incidents of one rule and source: an error's text, a heartbeat's name. */
  readonly errorKey: string | null;
  /** How many: failed deliveries, failures in the window, seconds of age, MB. */
  readonly count: number;
  /** One line that says what is wrong (shown escaped: it may hold a handler's error text). */
  readonly summary: string;
  /** Since when it holds, when the readings know (ms); else the incident's opening is. */
  readonly sinceMs: number | null;
}

