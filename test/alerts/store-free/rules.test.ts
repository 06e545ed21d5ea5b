/**
 * The rules as plain decisions (src/alerts/rules.ts): each table row is readings in, conditions
 * out. Times are the readings' own (`nowMs`), never the wall clock.
 */
import { describe, expect, it } from "vitest";
import { parseAlerts } from "../../../src/config/alerts";
import { evaluateRules, type Readings, type Sample } from "../../../src/alerts/rules";

const NOW = Date.parse("2026-12-06T12:00:00.000Z");
const MIN = 60_000;
const RULES = parseAlerts({}).alerts.rules;

const quiet: Readings = {
  nowMs: NOW,
  failureGroups: [],
  samples: [],
  signatureFailures: {},
  oldestWaitingSeconds: null,
  waiting: 0,
  heartbeats: {},
  destinations: [],
  databaseBytes: 1_000_000,
};

const sample = (atMs: number, bySource: Sample["bySource"]): Sample => ({ atMs, bySource });

const cases: { name: string; readings: Partial<Readings>; rules?: Partial<typeof RULES>; expected: { rule: string; source: string | null; errorKey: string | null; count: number }[] }[] = [
  { name: "nothing holds in a quiet inbox", readings: {}, expected: [] },
  {
    name: "one failure group is one condition, however many deliveries it holds",
    readings: { failureGroups: [{ source: "stripe", subscriber: null, errorKey: "boom", failedNow: 200, sinceMs: NOW - MIN }] },
    expected: [{ rule: "delivery_failed", source: "stripe", errorKey: "boom", count: 200 }],
  },
  {
    name: "two errors of one source are two conditions",
    readings: {
      failureGroups: [
        { source: "stripe", subscriber: null, errorKey: "boom", failedNow: 3, sinceMs: NOW },
        { source: "stripe", subscriber: null, errorKey: "bang", failedNow: 1, sinceMs: NOW },
      ],
    },
    expected: [
      { rule: "delivery_failed", source: "stripe", errorKey: "boom", count: 3 },
      { rule: "delivery_failed", source: "stripe", errorKey: "bang", count: 1 },
    ],
  },
  {
    name: "failures below ALERT_FAILED_DELIVERIES hold nothing",
    readings: { failureGroups: [{ source: "stripe", subscriber: null, errorKey: "boom", failedNow: 4, sinceMs: NOW }] },
    rules: { failedDeliveries: 5 },
    expected: [],
  },
  {
    name: "failed deliveries off (0)",
    readings: { failureGroups: [{ source: "stripe", subscriber: null, errorKey: "boom", failedNow: 4, sinceMs: NOW }] },
    rules: { failedDeliveries: 0 },
    expected: [],
  },
  {
    name: "a failure rate at the limit over the window holds",
    readings: {
      samples: [sample(NOW - 16 * MIN, { github: { received: 100, failedEver: 10 } }), sample(NOW - 5 * MIN, { github: { received: 110, failedEver: 12 } }), sample(NOW, { github: { received: 140, failedEver: 30 } })],
    },
    rules: { failedDeliveries: 0 },
    expected: [{ rule: "failure_rate", source: "github", errorKey: null, count: 20 }],
  },
  {
    name: "a failure rate below the limit holds nothing",
    readings: { samples: [sample(NOW - 16 * MIN, { github: { received: 100, failedEver: 10 } }), sample(NOW, { github: { received: 140, failedEver: 29 } })] },
    expected: [],
  },
  {
    name: "too few deliveries in the window to judge a rate",
    readings: { samples: [sample(NOW - 16 * MIN, { github: { received: 0, failedEver: 0 } }), sample(NOW, { github: { received: 10, failedEver: 10 } })] },
    expected: [],
  },
  {
    name: "retention's deletions never make a rate above 100%",
    readings: { samples: [sample(NOW - 16 * MIN, { github: { received: 1000, failedEver: 0 } }), sample(NOW, { github: { received: 900, failedEver: 25 } })] },
    rules: { failureRateMinDeliveries: 20 },
    expected: [{ rule: "failure_rate", source: "github", errorKey: null, count: 25 }],
  },
  { name: "a backlog younger than the limit holds nothing", readings: { oldestWaitingSeconds: 899, waiting: 3, heartbeats: { consumer: NOW } }, expected: [] },
  { name: "a backlog at the limit holds", readings: { oldestWaitingSeconds: 900, waiting: 3, heartbeats: { consumer: NOW } }, expected: [{ rule: "backlog_age", source: null, errorKey: null, count: 900 }] },
  { name: "signature failures at the limit hold per source", readings: { signatureFailures: { stripe: 20, github: 19 } }, expected: [{ rule: "signature_failures", source: "stripe", errorKey: null, count: 20 }] },
  { name: "signature failures off (0)", readings: { signatureFailures: { stripe: 500 } }, rules: { signatureFailures: 0 }, expected: [] },
  { name: "a cron never seen (wrangler dev) is not stopped", readings: { heartbeats: {} }, expected: [] },
  { name: "a cron silent past the limit is stopped", readings: { heartbeats: { cron: NOW - 601_000 } }, expected: [{ rule: "heartbeat", source: null, errorKey: "cron", count: 601 }] },
  { name: "a consumer silent while nothing waits is fine", readings: { heartbeats: { consumer: NOW - 3_600_000 } }, expected: [] },
  {
    name: "a consumer silent while deliveries wait past the limit is stopped",
    readings: { heartbeats: { consumer: NOW - 700_000 }, waiting: 5, oldestWaitingSeconds: 650 },
    expected: [{ rule: "heartbeat", source: null, errorKey: "consumer", count: 700 }],
  },
  { name: "a database below the size limit", readings: { databaseBytes: 8_999_999_999 }, expected: [] },
  { name: "a database at the size limit", readings: { databaseBytes: 9_000_000_000 }, expected: [{ rule: "database_size", source: null, errorKey: null, count: 9000 }] },
  { name: "a store that cannot tell its size", readings: { databaseBytes: null }, rules: { databaseSizeMb: 1 }, expected: [] },
];

describe("the rules", () => {
  it.each(cases)("$name", ({ readings, rules, expected }) => {
    const conditions = evaluateRules({ ...quiet, ...readings }, { ...RULES, ...rules });
    expect(conditions.map(({ rule, source, errorKey, count }) => ({ rule, source, errorKey, count }))).toEqual(expected);
  });

  describe("the failure rate per subscriber", () => {
    const rate = (bySource: Sample["bySource"], earlier: Sample["bySource"]) =>
      evaluateRules({ ...quiet, samples: [sample(NOW - 16 * MIN, earlier), sample(NOW, bySource)] }, { ...RULES, failedDeliveries: 0 }).map(({ rule, source, subscriber, count, summary }) => ({
        rule,
        source,
        subscriber,
        count,
        summary,
      }));

    it("names the subscriber that fails what its source's deliveries give it, not the others that take them well", () => {
      // 40 deliveries fanned out to a ledger and a CRM: the CRM failed 30 of them, the ledger 1.
      const earlier = { stripe: { received: 100, failedEver: 5, bySubscriber: { crm: 5, ledger: 2 } } };
      const now = { stripe: { received: 140, failedEver: 35, bySubscriber: { crm: 35, ledger: 3 } } };
      expect(rate(now, earlier)).toEqual([
        { rule: "failure_rate", source: "stripe", subscriber: "crm", count: 30, summary: "75% of stripe's deliveries failed for crm in the last 15 min (30 of 40)" },
      ]);
    });

    it("counts a subscriber first seen in the window from zero", () => {
      const earlier = { stripe: { received: 100, failedEver: 0, bySubscriber: {} } };
      const now = { stripe: { received: 130, failedEver: 30, bySubscriber: { analytics: 30 } } };
      expect(rate(now, earlier).map((each) => [each.subscriber, each.count])).toEqual([["analytics", 30]]);
    });

    it("judges the source as a whole when no subscriber reaches the rate, or none is named", () => {
      const earlier = { stripe: { received: 100, failedEver: 0, bySubscriber: { crm: 0, ledger: 0 } } };
      // Each subscriber fails 15 of 40 (37%), the deliveries 24 of 40 (60%): the source holds.
      const now = { stripe: { received: 140, failedEver: 24, bySubscriber: { crm: 15, ledger: 15 } } };
      expect(rate(now, earlier).map((each) => [each.source, each.subscriber, each.count])).toEqual([["stripe", null, 24]]);
      expect(rate({ github: { received: 140, failedEver: 30 } }, { github: { received: 100, failedEver: 0 } }).map((each) => each.subscriber)).toEqual([null]);
    });

    it("makes several subscribers reaching the rate at once one incident for the source (a payload every subscriber refuses is one fault)", () => {
      const earlier = { stripe: { received: 100, failedEver: 0, bySubscriber: { crm: 0, ledger: 0 } } };
      const now = { stripe: { received: 140, failedEver: 30, bySubscriber: { crm: 30, ledger: 30 } } };
      expect(rate(now, earlier)).toEqual([
        { rule: "failure_rate", source: "stripe", subscriber: null, count: 30, summary: "75% of stripe's deliveries failed (for crm, ledger) in the last 15 min (30 of 40)" },
      ]);
    });

    it("does not judge a subscriber against a baseline from before subscribers were counted", () => {
      const earlier = { stripe: { received: 100, failedEver: 0 } };
      const now = { stripe: { received: 140, failedEver: 5, bySubscriber: { crm: 900 } } };
      expect(rate(now, earlier)).toEqual([]);
    });
  });

  it("says since when a failure group has failed, and what failed", () => {
    const [condition] = evaluateRules({ ...quiet, failureGroups: [{ source: "stripe", subscriber: null, errorKey: "payment # not found", failedNow: 2, sinceMs: NOW - 5 * MIN }] }, RULES);
    expect(condition).toMatchObject({ sinceMs: NOW - 5 * MIN, summary: "2 deliveries of stripe failed: payment # not found" });
  });
});
