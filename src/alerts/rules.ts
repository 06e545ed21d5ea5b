/**
 * The rules: what holds now, decided from plain readings (the overview's snapshot and the small
 * counters the inbox keeps, src/store/alerts.ts), never from a scan of the deliveries. Each rule
 * returns the conditions that hold, one per thing that is wrong; incidents.ts turns conditions into
 * incidents (opened once, resolved once).
 *
 * A condition is keyed by (rule, source, subscriber, error): 500 failures of one bug in one handler
 * are one condition, counted 500. The subscriber is the one that failed, when
 * the delivery names one (a fanned-out delivery's runs each do; migrations/0015).
 */
import type { AlertRules } from "../config/alerts";
import type { FailureGroup } from "../store/alert-types";
import { breakerConditions, type DestinationState } from "./breaker";
import type { Condition } from "./condition";

/** A source's counts at one evaluation, to tell what happened between two. */
export interface SourceSample {
  /** Deliveries stored (the overview's total for the source). */
  readonly received: number;
  /** Deliveries that ever failed (a counter: a replay does not take it back). */
  readonly failedEver: number;
  /** Each subscriber's failures ever (a subscriber missing here had none); absent in a sample from before they were counted. */
  readonly bySubscriber?: Readonly<Record<string, number>>;
}

/** The samples kept between evaluations, oldest first (the failure rate's window). */
export interface Sample {
  readonly atMs: number;
  readonly bySource: Readonly<Record<string, SourceSample>>;
}

export interface Readings {
  readonly nowMs: number;
  readonly failureGroups: readonly FailureGroup[];
  /** This evaluation's sample and the earlier ones (failure rate). */
  readonly samples: readonly Sample[];
  /** Signature failures per source within the rule's window. */
  readonly signatureFailures: Readonly<Record<string, number>>;
  /** The overview's oldest waiting delivery, seconds; null when none waits. */
  readonly oldestWaitingSeconds: number | null;
  /** Deliveries waiting (received or processing). */
  readonly waiting: number;
  /** Heartbeats by name (`cron`, `consumer`), ms. */
  readonly heartbeats: Readonly<Record<string, number>>;
  readonly destinations: readonly DestinationState[];
  /** The database's size in bytes; null when the store cannot tell. */
  readonly databaseBytes: number | null;
}

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** A handler's or destination's failures, grouped per (source, subscriber, error). */
export function failedDeliveries(readings: Readings, rules: AlertRules): Condition[] {
  if (rules.failedDeliveries === 0) return [];
  return readings.failureGroups
    .filter((group) => group.failedNow >= rules.failedDeliveries)
    .map((group) => ({
      rule: "delivery_failed",
      source: group.source,
      subscriber: group.subscriber,
      errorKey: group.errorKey,
      count: group.failedNow,
      summary: `${plural(group.failedNow, "delivery", "deliveries")} of ${group.source}${group.subscriber ? ` (${group.subscriber})` : ""} failed: ${group.errorKey}`,
      sinceMs: group.sinceMs,
    }));
}

/**
 * Failures over the window reaching the rate, once the source received enough in that time to
 * judge. A subscriber's failures are measured against its source's deliveries (not only those it
 * accepted): when exactly one subscriber reaches the rate it is named (the CRM failing what a ledger
 * takes well); when several do, or none is named, the source's failed deliveries are judged, one
 * incident for the source.
 */
export function failureRate(readings: Readings, rules: AlertRules): Condition[] {
  if (rules.failureRatePercent === 0 || readings.samples.length < 2) return [];
  const windowStart = readings.nowMs - rules.failureRateWindowMinutes * 60_000;
  const now = readings.samples[readings.samples.length - 1]!;
  // The baseline: the newest sample from before the window began, else the oldest there is.
  const then = readings.samples.findLast((sample) => sample.atMs <= windowStart) ?? readings.samples[0]!;
  if (then === now) return [];
  const window = rules.failureRateWindowMinutes;
  const conditions: Condition[] = [];
  for (const [source, current] of Object.entries(now.bySource)) {
    const earlier = then.bySource[source];
    const receivedNow = current.received - (earlier?.received ?? 0);
    /** The rate of `failed` failures, when it holds: [percent, received]; else null. */
    const holds = (failed: number): [number, number] | null => {
      // Retention's deletions lower `received`: never judge a rate on fewer than the failures.
      const received = Math.max(failed, receivedNow);
      if (received < rules.failureRateMinDeliveries || failed * 100 < rules.failureRatePercent * received) return null;
      return [Math.round((failed * 100) / received), received];
    };
    // A baseline from before subscribers were counted cannot tell a subscriber's failures in the window.
    const bySubscriber = earlier !== undefined && earlier.bySubscriber === undefined ? {} : (current.bySubscriber ?? {});
    const named: Condition[] = [];
    for (const [subscriber, failedEver] of Object.entries(bySubscriber)) {
      const failed = Math.max(0, failedEver - (earlier?.bySubscriber?.[subscriber] ?? 0));
      const rate = holds(failed);
      if (!rate) continue;
      named.push({
        rule: "failure_rate",
        source,
        subscriber,
        errorKey: null,
        count: failed,
        summary: `${rate[0]}% of ${source}'s deliveries failed for ${subscriber} in the last ${window} min (${failed} of ${rate[1]})`,
        sinceMs: null,
      });
    }
    // One subscriber reaching the rate is named. Several at once, or none, is the source's problem:
    // one incident for it (a payload every subscriber refuses is one fault, not N).
    if (named.length === 1) {
      conditions.push(named[0]!);
      continue;
    }
    const failed = Math.max(0, current.failedEver - (earlier?.failedEver ?? 0));
    const rate = holds(failed);
    if (!rate) {
      conditions.push(...named);
      continue;
    }
    conditions.push({
      rule: "failure_rate",
      source,
      subscriber: null,
      errorKey: null,
      count: failed,
      summary: `${rate[0]}% of ${source}'s deliveries failed${named.length > 1 ? ` (for ${named.map((each) => each.subscriber).join(", ")})` : ""} in the last ${window} min (${failed} of ${rate[1]})`,
      sinceMs: null,
    });
  }
  return conditions;
}

export function backlogAge(readings: Readings, rules: AlertRules): Condition[] {
  const age = readings.oldestWaitingSeconds;
  if (rules.backlogAgeSeconds === 0 || age === null || age < rules.backlogAgeSeconds) return [];
  return [
    {
      rule: "backlog_age",
      source: null,
      subscriber: null,
      errorKey: null,
      count: age,
      summary: `the oldest waiting delivery is ${age} s old (limit ${rules.backlogAgeSeconds} s; ${plural(readings.waiting, "delivery", "deliveries")} waiting)`,
      sinceMs: readings.nowMs - age * 1000,
    },
  ];
}

export function signatureFailures(readings: Readings, rules: AlertRules): Condition[] {
  if (rules.signatureFailures === 0) return [];
  return Object.entries(readings.signatureFailures)
    .filter(([, n]) => n >= rules.signatureFailures)
    .map(([source, n]) => ({
      rule: "signature_failures",
      source,
      subscriber: null,
      errorKey: null,
      count: n,
      summary: `${plural(n, "request")} to ${source} failed signature verification in the last ${rules.signatureWindowMinutes} min (a rotated secret, or someone probing)`,
      sinceMs: null,
    }));
}

/**
 * A part that stopped: the cron's sweep (only once one was seen: `wrangler dev` runs none), and the
 * consumer while deliveries wait for it.
 */
export function heartbeats(readings: Readings, rules: AlertRules): Condition[] {
  if (rules.heartbeatSeconds === 0) return [];
  const limitMs = rules.heartbeatSeconds * 1000;
  const conditions: Condition[] = [];
  const cron = readings.heartbeats.cron;
  if (cron !== undefined && readings.nowMs - cron > limitMs) {
    conditions.push(stopped("cron", cron, readings.nowMs, "the cron trigger's sweep has not run (the heartbeat object sweeps meanwhile)"));
  }
  const consumer = readings.heartbeats.consumer;
  const waitedMs = (readings.oldestWaitingSeconds ?? 0) * 1000;
  if (readings.waiting > 0 && waitedMs > limitMs && (consumer === undefined || readings.nowMs - consumer > limitMs)) {
    conditions.push(stopped("consumer", consumer ?? readings.nowMs - waitedMs, readings.nowMs, `the queue consumer has not run while ${plural(readings.waiting, "delivery", "deliveries")} wait`));
  }
  return conditions;
}

function stopped(name: string, lastMs: number, nowMs: number, what: string): Condition {
  const seconds = Math.floor((nowMs - lastMs) / 1000);
  return { rule: "heartbeat", source: null, subscriber: null, errorKey: name, count: seconds, summary: `${what}: last seen ${seconds} s ago`, sinceMs: lastMs };
}

export function databaseSize(readings: Readings, rules: AlertRules): Condition[] {
  if (rules.databaseSizeMb === 0 || readings.databaseBytes === null) return [];
  const mb = Math.floor(readings.databaseBytes / 1_000_000);
  if (mb < rules.databaseSizeMb) return [];
  return [{ rule: "database_size", source: null, subscriber: null, errorKey: null, count: mb, summary: `the database holds ${mb} MB (alert at ${rules.databaseSizeMb} MB)`, sinceMs: null }];
}

/**
 * Every condition that holds for `readings` under `rules`.
 * @example
 * evaluateRules({ ...readings, oldestWaitingSeconds: 1200 }, rules); // [{ rule: "backlog_age", count: 1200, … }]
 */
export function evaluateRules(readings: Readings, rules: AlertRules): Condition[] {
  return [
    ...failedDeliveries(readings, rules),
    ...failureRate(readings, rules),
    ...backlogAge(readings, rules),
    ...signatureFailures(readings, rules),
    ...breakerConditions(readings.destinations, readings.nowMs),
    ...heartbeats(readings, rules),
    ...databaseSize(readings, rules),
  ];
}
