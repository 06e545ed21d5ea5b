/**
 * Source filters by configuration: `<SOURCE>_FILTER` (a var holding JSON, docs/filters.md) keeps
 * the deliveries of that source that do not match out of processing: they are stored as
 * `filtered`, with the clause that failed, and never run.
 *
 * Read with the other vars (index.ts), so a filter that is not JSON or not a valid filter is
 * `config_invalid` like any other bad var: the inbox answers 503 and `GET /health` names the var,
 * rather than letting every delivery through (or none). As for forwarding, every `<NAME>_FILTER`
 * var is read and a source finds its own by its var prefix. An empty value counts as unset.
 */
import { parseFilter, type Filter } from "../filters";
import type { ConfigProblem } from "./problem";
import { sourceVarPrefix } from "./secrets";

/** The source filters, by the source's var prefix (`stripe` → `STRIPE`). */
export interface SourceFiltersConfig {
  readonly byPrefix: Readonly<Record<string, Filter>>;
}

/** A filter var's text is bounded before it is parsed: the filter's own bounds need far less. */
export const MAX_FILTER_VAR_LENGTH = 16_384;

const FILTER_VAR = /^([A-Z0-9_]+)_FILTER$/;

/** `stripe` → `STRIPE_FILTER`. */
export function sourceFilterVarName(source: string): string {
  return `${sourceVarPrefix(source)}_FILTER`;
}

/** The filter of `source`, if it has one. */
export function sourceFilterOf(filters: SourceFiltersConfig, source: string): Filter | undefined {
  const prefix = sourceVarPrefix(source);
  return Object.hasOwn(filters.byPrefix, prefix) ? filters.byPrefix[prefix] : undefined;
}

/**
 * Reads every `<NAME>_FILTER` var of `env`. A problem names the var and what is wrong (the JSON
 * parser's message or the filter's path), never the var's value.
 * @example
 * parseSourceFilters({ STRIPE_FILTER: '{"field":"type","prefix":"invoice."}' });
 * // { filters: { byPrefix: { STRIPE: { field: "type", prefix: "invoice." } } }, problems: [] }
 */
export function parseSourceFilters(env: object): { filters: SourceFiltersConfig; problems: ConfigProblem[] } {
  const vars = env as Record<string, unknown>;
  const byPrefix: Record<string, Filter> = {};
  const problems: ConfigProblem[] = [];
  for (const name of Object.keys(vars).sort()) {
    const prefix = FILTER_VAR.exec(name)?.[1];
    const value = vars[name];
    // A forward destination's filter (`<SOURCE>_FORWARD[_<NAME>]_FILTER`) is forwarding's (config/forwarding.ts).
    if (prefix === undefined || /(^|_)FORWARD(_|$)/.test(prefix) || typeof value !== "string" || value.trim() === "") continue;
    if (value.length > MAX_FILTER_VAR_LENGTH) {
      problems.push({ variables: [name], problem: `longer than ${MAX_FILTER_VAR_LENGTH} characters` });
      continue;
    }
    let json: unknown;
    try {
      json = JSON.parse(value);
    } catch {
      problems.push({ variables: [name], problem: "must be JSON: a filter as docs/filters.md describes" });
      continue;
    }
    const filter = parseFilter(json);
    if (filter.ok) byPrefix[prefix] = filter.filter;
    else problems.push({ variables: [name], problem: filter.problem });
  }
  return { filters: { byPrefix }, problems };
}
