/** The "breaker open" rule over destination states (src/alerts/breaker.ts): the breaker itself comes with issue 26. */
import { describe, expect, it } from "vitest";
import { breakerConditions, type DestinationState } from "../../../src/alerts/breaker";

const NOW = Date.parse("2026-12-06T12:00:00.000Z");

const cases: { name: string; states: DestinationState[]; expected: { subscriber: string; count: number; open: boolean }[] }[] = [
  { name: "no destinations, nothing holds", states: [], expected: [] },
  { name: "a closed breaker holds nothing", states: [{ destination: "billing", state: "closed", since: NOW - 60_000 }], expected: [] },
  { name: "an open breaker holds, counted in seconds since it opened", states: [{ destination: "billing", state: "open", since: NOW - 90_000 }], expected: [{ subscriber: "billing", count: 90, open: true }] },
  { name: "a half-open breaker is still down", states: [{ destination: "billing", state: "half_open", since: NOW - 5_000 }], expected: [{ subscriber: "billing", count: 5, open: false }] },
  {
    name: "each destination on its own",
    states: [
      { destination: "billing", state: "open", since: NOW - 1_000 },
      { destination: "search", state: "closed", since: NOW - 1_000 },
      { destination: "crm", state: "open", since: NOW - 2_000 },
    ],
    expected: [
      { subscriber: "billing", count: 1, open: true },
      { subscriber: "crm", count: 2, open: true },
    ],
  },
];

describe("the breaker rule", () => {
  it.each(cases)("$name", ({ states, expected }) => {
    const conditions = breakerConditions(states, NOW);
    expect(conditions.map((each) => ({ subscriber: each.subscriber, count: each.count, open: each.summary.endsWith("is open") }))).toEqual(expected);
    for (const condition of conditions) expect(condition.rule).toBe("breaker_open");
  });
});
