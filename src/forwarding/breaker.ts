/**
 * The circuit breaker of a forward destination, as pure decisions over plain data: what the
 * limiter object (limiter.ts) stores and applies, and what the table-driven tests check
 * (test/forwarding/store-free/breaker.test.ts). No clock, no storage, no randomness here.
 *
 * - **closed**: requests go. Each failure the destination is to blame for (a network error, a
 *   timeout, 5xx, 408, 429) adds one to a count of failures in a row; any 2xx resets it. At
 *   `failures` in a row it opens. Failures in a row rather than a rate over a window: it needs no
 *   window of samples stored, it acts the same at one delivery a minute and at a thousand, and a
 *   backend that answers anything 2xx between its errors is up. A 4xx other than 408/429, or a
 *   redirect, is the delivery's fault (its body, its URL): it neither counts nor resets.
 * - **open**: nothing goes until `reopenAtMs`; each request is told to wait until then (a
 *   `DeferredError`: no attempt is used). The open period is `openSeconds` at first and doubles
 *   each time a probe fails, up to BREAKER_MAX_OPEN_SECONDS.
 * - **half-open**: from `reopenAtMs`, exactly one request at a time goes, as the probe; the
 *   others wait. The probe holds the turn until it answers or `probeUntilMs` passes (a probe whose
 *   worker died). A probe that the destination answers (2xx, or a 4xx that shows it is up) closes
 *   it; one that fails opens it again, for longer.
 */
import { BREAKER_MAX_OPEN_SECONDS, type BreakerSettings } from "../config/destination";

export type BreakerStatus = "closed" | "open" | "half-open";

/** A destination's breaker, as stored. */
export interface BreakerState {
  readonly status: BreakerStatus;
  /** When it entered `status` (ms). */
  readonly sinceMs: number;
  /** Failures in a row while closed. */
  readonly failures: number;
  /** Open periods in a row (the next one lasts openSeconds · 2^openings, capped); 0 once closed. */
  readonly openings: number;
  /** Open: when the next probe may go. Half-open: null. */
  readonly reopenAtMs: number | null;
  /** Half-open: the request that is the probe, and until when it holds the turn. */
  readonly probe: { readonly id: string; readonly untilMs: number } | null;
}

export const CLOSED: BreakerState = { status: "closed", sinceMs: 0, failures: 0, openings: 0, reopenAtMs: null, probe: null };

/** How a request to the destination ended, as the breaker counts it. */
export type BreakerOutcome = "success" | "failure" | "not-counted";

/** What `admit` decides: go (as a probe or not), or wait until `untilMs`. */
export type Admission = { readonly go: true; readonly probe: boolean } | { readonly go: false; readonly untilMs: number };

/** The longest a waiting request is told to wait for a probe's answer before asking again. */
export const PROBE_WAIT_MAX_MS = 5_000;

/** How long an open period lasts after `openings` in a row (1: the first). */
export function openPeriodMs(settings: BreakerSettings, openings: number): number {
  const seconds = Math.min(BREAKER_MAX_OPEN_SECONDS, settings.openSeconds * 2 ** Math.min(20, Math.max(0, openings - 1)));
  return Math.max(settings.openSeconds, seconds) * 1000;
}

/**
 * Whether request `requestId` may go now, and the state after. `holdMs` is how long a probe may
 * take before another request may probe instead (its request timeout and a margin).
 */
export function admit(state: BreakerState, nowMs: number, requestId: string, holdMs: number): { admission: Admission; state: BreakerState } {
  if (state.status === "closed") return { admission: { go: true, probe: false }, state };
  if (state.status === "open" && state.reopenAtMs !== null && nowMs < state.reopenAtMs) {
    return { admission: { go: false, untilMs: state.reopenAtMs }, state };
  }
  const probe = state.probe;
  if (state.status === "half-open" && probe !== null && probe.id !== requestId && probe.untilMs > nowMs) {
    return { admission: { go: false, untilMs: Math.min(probe.untilMs, nowMs + PROBE_WAIT_MAX_MS) }, state };
  }
  // Open and due, or half-open with no live probe (or this is the probe asking again): it probes.
  const sinceMs = state.status === "half-open" ? state.sinceMs : nowMs;
  return {
    admission: { go: true, probe: true },
    state: { ...state, status: "half-open", sinceMs, reopenAtMs: null, probe: { id: requestId, untilMs: nowMs + holdMs } },
  };
}

/** The state after request `requestId` ended with `outcome`. */
export function record(state: BreakerState, nowMs: number, settings: BreakerSettings, requestId: string, outcome: BreakerOutcome): BreakerState {
  const isProbe = state.status === "half-open" && state.probe?.id === requestId;
  if (outcome === "success" || (outcome === "not-counted" && isProbe)) {
    // The destination answers: closed, and every count starts again.
    if (state.status !== "closed") return { ...CLOSED, sinceMs: nowMs };
    return state.failures === 0 ? state : { ...state, failures: 0 };
  }
  if (outcome === "not-counted") return state;
  if (state.status === "closed") {
    const failures = state.failures + 1;
    if (failures < settings.failures) return { ...state, failures };
    return { status: "open", sinceMs: nowMs, failures, openings: 1, reopenAtMs: nowMs + openPeriodMs(settings, 1), probe: null };
  }
  if (isProbe) {
    const openings = state.openings + 1;
    return { status: "open", sinceMs: nowMs, failures: state.failures + 1, openings, reopenAtMs: nowMs + openPeriodMs(settings, openings), probe: null };
  }
  // A request let through before it opened that failed late: it is open already, nothing to add.
  return state;
}
