/** Incidents planned from conditions (src/alerts/incidents.ts): opened once, kept, recalled, resolved once. */
import { describe, expect, it } from "vitest";
import { incidentKey, planIncidents, type OpenIncident } from "../../../src/alerts/incidents";
import type { Condition } from "../../../src/alerts/condition";

const NOW = Date.parse("2026-12-06T12:00:00.000Z");
const HOUR = 3_600_000;

const failing = (count: number, errorKey = "boom"): Condition => ({
  rule: "delivery_failed",
  source: "stripe",
  subscriber: null,
  errorKey,
  count,
  summary: `${count} failed`,
  sinceMs: NOW,
});
const incident = (condition: Condition, id: number, notifiedAtMs = NOW - HOUR): OpenIncident => ({ id, key: incidentKey(condition), openedAtMs: notifiedAtMs, notifiedAtMs, count: condition.count });

const cases: { name: string; conditions: Condition[]; open: OpenIncident[]; expected: { open: number; keep: number[]; remind: number[]; resolve: number[] } }[] = [
  { name: "a first condition opens an incident", conditions: [failing(1)], open: [], expected: { open: 1, keep: [], remind: [], resolve: [] } },
  { name: "a condition that still holds keeps its incident open, no message", conditions: [failing(200)], open: [incident(failing(1), 7)], expected: { open: 0, keep: [7], remind: [], resolve: [] } },
  { name: "a condition that stopped holding resolves its incident", conditions: [], open: [incident(failing(1), 7)], expected: { open: 0, keep: [], remind: [], resolve: [7] } },
  { name: "an incident open past the reminder interval is recalled", conditions: [failing(3)], open: [incident(failing(1), 7, NOW - 4 * HOUR)], expected: { open: 0, keep: [7], remind: [7], resolve: [] } },
  { name: "another error of the same source is an incident of its own", conditions: [failing(1), failing(1, "bang")], open: [incident(failing(1), 7)], expected: { open: 1, keep: [7], remind: [], resolve: [] } },
  { name: "one condition twice opens one incident", conditions: [failing(1), failing(2)], open: [], expected: { open: 1, keep: [], remind: [], resolve: [] } },
];

describe("planning incidents", () => {
  it.each(cases)("$name", ({ conditions, open, expected }) => {
    const plan = planIncidents(conditions, open, NOW, 4 * HOUR);
    expect({ open: plan.open.length, keep: plan.keep.map((kept) => kept.id), remind: plan.remind, resolve: plan.resolve }).toEqual(expected);
  });

  it("sends no reminder with ALERT_REMINDER_HOURS=0", () => {
    expect(planIncidents([failing(1)], [incident(failing(1), 7, NOW - 100 * HOUR)], NOW, 0).remind).toEqual([]);
  });

  it("brings a kept incident's count up to date", () => {
    expect(planIncidents([failing(200)], [incident(failing(1), 7)], NOW, 4 * HOUR).keep).toEqual([{ id: 7, count: 200, summary: "200 failed" }]);
  });

  it("keys incidents without ambiguity: a source holding a separator is not another source's error", () => {
    const a = incidentKey({ rule: "delivery_failed", source: "a,b", subscriber: null, errorKey: "c" });
    const b = incidentKey({ rule: "delivery_failed", source: "a", subscriber: null, errorKey: "b,c" });
    expect(a).not.toBe(b);
  });
});
