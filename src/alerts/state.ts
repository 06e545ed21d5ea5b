/**
 * What alerting remembers between evaluations (stored as JSON in one mark, store/alerts.ts): when
 * it last evaluated and pruned, and the samples of each source's counts over the failure rate's
 * window. Pure: the beat reads and writes it.
 */
import type { Sample, SourceSample } from "./rules";

export interface AlertState {
  readonly lastEvaluatedMs: number | null;
  readonly lastPrunedMs: number | null;
  readonly samples: readonly Sample[];
}

const EMPTY: AlertState = { lastEvaluatedMs: null, lastPrunedMs: null, samples: [] };

/** The stored state, or an empty one when there is none or it is unreadable. */
export function parseState(text: string | null): AlertState {
  if (text === null) return EMPTY;
  try {
    const parsed = JSON.parse(text) as Partial<AlertState>;
    return {
      lastEvaluatedMs: typeof parsed.lastEvaluatedMs === "number" ? parsed.lastEvaluatedMs : null,
      lastPrunedMs: typeof parsed.lastPrunedMs === "number" ? parsed.lastPrunedMs : null,
      samples: Array.isArray(parsed.samples) ? parsed.samples : [],
    };
  } catch {
    return EMPTY;
  }
}

/** True when an evaluation is due at `nowMs` (at most one per `intervalMs`). */
export function evaluationDue(state: AlertState, nowMs: number, intervalMs: number): boolean {
  // A clock that went back (a stored time in the future) must not stop alerting.
  return state.lastEvaluatedMs === null || nowMs - state.lastEvaluatedMs >= intervalMs || state.lastEvaluatedMs > nowMs;
}

/**
 * The samples with `sample` added, keeping the newest one at or before the window's start (the
 * rate's baseline) and everything after it.
 * @example
 * withSample([{ atMs: 0, … }, { atMs: 60_000, … }], { atMs: 960_000, … }, 900_000); // [{ atMs: 60_000 }, { atMs: 960_000 }]
 */
export function withSample(samples: readonly Sample[], sample: Sample, windowMs: number): Sample[] {
  const start = sample.atMs - windowMs;
  const all = [...samples.filter((each) => each.atMs < sample.atMs), sample];
  const baseline = all.findLastIndex((each) => each.atMs <= start);
  return all.slice(Math.max(0, baseline));
}

/** A source's counts for a sample: what it stored, its failed deliveries ever, and each subscriber's failures ever. */
export function sourceSamples(
  received: Readonly<Record<string, number>>,
  failedEver: Readonly<Record<string, number>>,
  failedEverBySubscriber: Readonly<Record<string, Readonly<Record<string, number>>>> = {},
): Record<string, SourceSample> {
  const sources = new Set([...Object.keys(received), ...Object.keys(failedEver), ...Object.keys(failedEverBySubscriber)]);
  return Object.fromEntries(
    [...sources].sort().map((source) => [source, { received: received[source] ?? 0, failedEver: failedEver[source] ?? 0, bySubscriber: { ...failedEverBySubscriber[source] } }]),
  );
}
