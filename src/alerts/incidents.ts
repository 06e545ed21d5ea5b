/**
 * Incidents, not messages: what one evaluation changes, decided from the conditions that hold and
 * the incidents open, as plain data (the beat applies it, beat.ts).
 *
 * - A condition with no open incident of its key opens one: one "opened" message.
 * - An open incident whose condition still holds is kept (its count brought up to date); past the
 *   reminder interval since it opened or was last recalled, one "reminder" message.
 * - An open incident whose condition no longer holds is resolved: one "resolved" message.
 *
 * So 500 failures of one bug make one incident and two messages, however many evaluations pass.
 */
import type { Condition, RuleName } from "./condition";

/** An incident as the store keeps it (the part that decisions need). */
export interface OpenIncident {
  readonly id: number;
  readonly key: string;
  readonly openedAtMs: number;
  /** When the last message (opened or reminder) was made for it. */
  readonly notifiedAtMs: number;
  readonly count: number;
}

export type MessageKind = "opened" | "reminder" | "resolved";

export interface IncidentPlan {
  /** Conditions to open incidents for, with their keys. */
  readonly open: readonly (Condition & { readonly key: string })[];
  /** Open incidents that still hold, their count and summary as now. */
  readonly keep: readonly { readonly id: number; readonly count: number; readonly summary: string }[];
  /** Open incidents due a reminder (also in `keep`). */
  readonly remind: readonly number[];
  /** Open incidents whose condition no longer holds. */
  readonly resolve: readonly number[];
}

/**
 * The key of a condition's incident: (rule, source, subscriber, error), encoded without ambiguity.
 * @example
 * incidentKey({ rule: "delivery_failed", source: "stripe", subscriber: null, errorKey: "boom" }); // '["delivery_failed","stripe",null,"boom"]'
 */
export function incidentKey(condition: { readonly rule: RuleName; readonly source: string | null; readonly subscriber: string | null; readonly errorKey: string | null }): string {
  return JSON.stringify([condition.rule, condition.source, condition.subscriber, condition.errorKey]);
}

/**
 * What changes at `nowMs`, given the conditions that hold and the incidents open.
 * @example
 * planIncidents([condition], [], now, 4 * HOUR_MS); // { open: [condition + key], keep: [], remind: [], resolve: [] }
 * planIncidents([], [incident], now, 4 * HOUR_MS); // { open: [], keep: [], remind: [], resolve: [incident.id] }
 */
export function planIncidents(conditions: readonly Condition[], open: readonly OpenIncident[], nowMs: number, reminderMs: number): IncidentPlan {
  const holding = new Map<string, Condition>();
  // One condition per key (two rules never share a key; a repeated key keeps the larger count).
  for (const condition of conditions) {
    const key = incidentKey(condition);
    const seen = holding.get(key);
    if (!seen || condition.count > seen.count) holding.set(key, condition);
  }
  const openByKey = new Map(open.map((incident) => [incident.key, incident]));
  const plan = { open: [] as (Condition & { key: string })[], keep: [] as { id: number; count: number; summary: string }[], remind: [] as number[], resolve: [] as number[] };
  for (const [key, condition] of holding) {
    const incident = openByKey.get(key);
    if (!incident) {
      plan.open.push({ ...condition, key });
      continue;
    }
    plan.keep.push({ id: incident.id, count: condition.count, summary: condition.summary });
    if (reminderMs > 0 && nowMs - incident.notifiedAtMs >= reminderMs) plan.remind.push(incident.id);
  }
  for (const incident of open) if (!holding.has(incident.key)) plan.resolve.push(incident.id);
  return plan;
}

/** True when the plan changes nothing but counts. */
export function planIsQuiet(plan: IncidentPlan): boolean {
  return plan.open.length === 0 && plan.remind.length === 0 && plan.resolve.length === 0;
}
