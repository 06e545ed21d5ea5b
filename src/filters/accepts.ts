/**
 * A declarative filter as a subscriber's `accepts` (docs/filters.md "A subscriber's filter"):
 * checked once, where the handlers are declared, so that a bad filter fails at startup rather
 * than matching nothing at run time.
 */
import { evaluateFilter } from "./evaluate";
import { parseFilter } from "./parse";
import type { FilterInput } from "./types";

/**
 * The predicate of a filter: true for a delivery that matches.
 * @throws Error naming the bad clause's path when `filter` is not a valid filter (misuse, not data).
 * @example
 * accepts: acceptsFilter({ field: "type", prefix: "invoice." })
 */
export function acceptsFilter(filter: unknown): (input: FilterInput) => boolean {
  const parsed = parseFilter(filter);
  if (!parsed.ok) throw new Error(`invalid filter: ${parsed.problem}`);
  return (input) => evaluateFilter(parsed.filter, input).match;
}
