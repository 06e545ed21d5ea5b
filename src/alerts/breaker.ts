/**
 * The "breaker open" rule: a forward destination whose circuit breaker stopped sending to it.
 *
 * The rule is a plain function over the destinations' states; `destinationStates` reads them from
 * each configured destination's limiter object (forwarding/breakers.ts), once per evaluation.
 */
import { sourceVarPrefix } from "../config/secrets";
import { readBreakers } from "../forwarding/breakers";
import type { Condition } from "./condition";

/** A forward destination's breaker, as the rule reads it. */
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
 * The breakers of every configured forward destination (`<SOURCE>_FORWARD_…_URL`), named by their
 * subscriber name and source. `sources`: the source names known (the overview's), to name a
 * destination's source by its var prefix; a prefix with none of them is shown lower-cased. A
 * breaker whose object could not be asked is left out: an unknown state opens no incident.
 */
export async function destinationStates(env: Env, sources: readonly string[]): Promise<DestinationState[]> {
  const byPrefix = new Map(sources.map((source) => [sourceVarPrefix(source), source]));
  const breakers = await readBreakers(env);
  return breakers.flatMap((breaker): DestinationState[] => {
    if (breaker.status === "unknown") return [];
    return [
      {
        destination: breaker.name,
        state: breaker.status === "half-open" ? "half_open" : breaker.status,
        since: breaker.sinceMs ?? 0,
        source: byPrefix.get(breaker.prefix) ?? breaker.prefix.toLowerCase(),
      },
    ];
  });
}
