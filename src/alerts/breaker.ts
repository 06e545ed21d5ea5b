/**
 * The "breaker open" rule: a forward destination whose circuit breaker stopped sending to it.
 *
 * The breaker itself comes with subscribers (issue 26); this is the rule over its states, a plain
 * function, and the one place that will read them (`destinationStates`, empty until then).
 */
import type { Condition } from "./rules";

/** A forward destination's breaker, as issue 26's breaker will report it. */
export interface DestinationState {
  /** The destination's name (a subscriber's, or the source's forward). */
  readonly destination: string;
  readonly state: "closed" | "open" | "half_open";
  /** Since when it is in that state (ms). */
  readonly since: number;
  /** The source it serves, when known. */
  readonly source?: string;
}

/**
 * One condition per destination whose breaker is not closed: half-open is still down (it lets a
 * probe through, no traffic), so an outage is one incident from open to closed.
 * @example
 * breakerConditions([{ destination: "billing", state: "open", since: t }], now); // [{ rule: "breaker_open", errorKey: "billing", … }]
 */
export function breakerConditions(states: readonly DestinationState[], nowMs: number): Condition[] {
  return states
    .filter((each) => each.state !== "closed")
    .map((each) => ({
      rule: "breaker_open",
      source: each.source ?? null,
      subscriber: each.destination,
      errorKey: null,
      count: Math.max(0, Math.floor((nowMs - each.since) / 1000)),
      summary: `forward destination ${each.destination} is down: its breaker is ${each.state === "open" ? "open" : "half-open (probing)"}`,
      sinceMs: each.since,
    }));
}

/**
 * The breakers' states. None exist yet: forward destinations get a circuit breaker with
 * subscribers (issue 26), whose states are to be returned here.
 */
export async function destinationStates(): Promise<DestinationState[]> {
  return [];
}
