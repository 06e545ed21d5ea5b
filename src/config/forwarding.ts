/**
 * Forwarding by configuration: `<SOURCE>_FORWARD_URL` (a var) forwards every delivery of that
 * source, signed with the secret `<SOURCE>_FORWARD_SECRET`: the source's first destination, the
 * subscriber `forward`. More are `<SOURCE>_FORWARD_<NAME>_URL` with their own `_SECRET`, each the
 * subscriber `<name>` (lower-case). Each destination may set `_TIMEOUT_SECONDS`, `_CONCURRENCY`,
 * `_MAX_ATTEMPTS`, `_RETRY_BASE_SECONDS` (the inbox's by default), `_BREAKER_FAILURES`,
 * `_BREAKER_OPEN_SECONDS` and `_FILTER`. How a var's name is read: forward-vars.ts.
 *
 * Read with the other vars (index.ts), so a bad one is `config_invalid` like any other: the
 * inbox answers 503, `GET /health` names the var, and queued deliveries wait; none is sent to a
 * guess. Every `<NAME>_FORWARD_URL` var is checked, not only those of a source, so that the vars
 * a `forward()` handler reads (docs/forwarding.md: name them the same way) are checked before any delivery
 * too. An empty value counts as unset, as for webhook secrets; a setting whose destination has no
 * URL is a problem (it would silently do nothing).
 */
import { longestBackoffSeconds, MAX_HANDLER_TIMEOUT_SECONDS, parseWholeNumber, QUEUE_MAX_DELAY_SECONDS, wholeNumberRange } from "./limits";
import type { ConfigProblem } from "./problem";
import { parseFilter } from "../filters";
import { sourceVarPrefix } from "./secrets";
import {
  BREAKER_MAX_OPEN_SECONDS,
  checkForwardSecret,
  checkForwardUrl,
  DEFAULT_BREAKER_FAILURES,
  DEFAULT_BREAKER_OPEN_SECONDS,
  DEFAULT_CONCURRENCY,
  DEFAULT_TIMEOUT_SECONDS,
  MAX_BREAKER_FAILURES,
  MAX_CONCURRENCY,
  timeoutProblem,
  type ForwardDestination,
  type TimeoutLimits,
} from "./destination";
import { FIRST_DESTINATION_NAME, forwardVarName, readForwardVar, RESERVED_NAMES, type ForwardVar } from "./forward-vars";

/** A destination with its subscriber name: `forward` for `<SOURCE>_FORWARD_URL`, else `<name>`. */
export type NamedDestination = ForwardDestination & { readonly name: string };

/**
 * The destinations of each source that has some, by the source's var prefix (`stripe` → `STRIPE`),
 * the first destination first, then by name: every `…_FORWARD_…_URL` is read, and a source finds
 * its own by its name's prefix, so the config needs no list of sources.
 */
export interface ForwardingConfig {
  readonly byPrefix: Readonly<Record<string, readonly NamedDestination[]>>;
}

/** What the destinations default to and are checked against: the inbox's own settings. */
export interface ForwardingLimits extends TimeoutLimits {
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
}

/** The vars of the first destination of `prefix` (a source's var prefix, e.g. `STRIPE`). */
export function forwardVarNames(prefix: string, varName: string | null = null) {
  return {
    url: forwardVarName(prefix, varName, "URL"),
    secret: forwardVarName(prefix, varName, "SECRET"),
    timeout: forwardVarName(prefix, varName, "TIMEOUT_SECONDS"),
    concurrency: forwardVarName(prefix, varName, "CONCURRENCY"),
    maxAttempts: forwardVarName(prefix, varName, "MAX_ATTEMPTS"),
    retryBase: forwardVarName(prefix, varName, "RETRY_BASE_SECONDS"),
    filter: forwardVarName(prefix, varName, "FILTER"),
    breakerFailures: forwardVarName(prefix, varName, "BREAKER_FAILURES"),
    breakerOpenSeconds: forwardVarName(prefix, varName, "BREAKER_OPEN_SECONDS"),
  };
}

/** Every destination of `source`, the first (`forward`) first, then by name; empty when none. */
export function destinationsOf(forwarding: ForwardingConfig, source: string): readonly NamedDestination[] {
  const prefix = sourceVarPrefix(source);
  return Object.hasOwn(forwarding.byPrefix, prefix) ? forwarding.byPrefix[prefix]! : [];
}

/** The first destination of `source` (`<SOURCE>_FORWARD_URL`), if it has one. */
export function destinationOf(forwarding: ForwardingConfig, source: string): NamedDestination | undefined {
  return destinationsOf(forwarding, source).find((destination) => destination.name === FIRST_DESTINATION_NAME);
}

/** A var's text, or undefined when unset or empty. */
function text(env: Record<string, unknown>, name: string): string | undefined {
  const value = env[name];
  return typeof value === "string" && value.trim() !== "" ? value : undefined;
}

/** An optional whole-number var: its value, its default when unset, or null when malformed. */
function wholeNumber(env: Record<string, unknown>, name: string, defaultValue: number, min: number, max: number): number | null {
  const value = text(env, name);
  return value === undefined ? defaultValue : parseWholeNumber(value, min, max);
}

/** The defaults when the inbox's own vars are bad (only each var's own checks run then). */
const FALLBACK = { maxAttempts: 5, retryBaseSeconds: 2 };

/** One destination's vars: the destination, or what is wrong with them. */
function readDestination(env: Record<string, unknown>, key: ForwardVar, limits: ForwardingLimits | null): NamedDestination | ConfigProblem[] {
  const names = forwardVarNames(key.prefix, key.varName);
  const problems: ConfigProblem[] = [];
  const url = checkForwardUrl(text(env, names.url) ?? "");
  if (!url.ok) problems.push({ variables: [names.url], problem: url.problem });
  const secretText = text(env, names.secret);
  const secret = secretText === undefined ? null : checkForwardSecret(secretText);
  if (secret === null) {
    problems.push({ variables: [names.secret], problem: `must be set when ${names.url} is (a Standard Webhooks secret: whsec_ followed by base64)` });
  } else if (!secret.ok) {
    problems.push({ variables: [names.secret], problem: secret.problem });
  }
  // A request timeout above the handler's ceiling could never fit a consumer invocation.
  const timeoutSeconds = wholeNumber(env, names.timeout, DEFAULT_TIMEOUT_SECONDS, 1, MAX_HANDLER_TIMEOUT_SECONDS);
  if (timeoutSeconds === null) {
    problems.push({ variables: [names.timeout], problem: wholeNumberRange(1, MAX_HANDLER_TIMEOUT_SECONDS) });
  } else if (limits) {
    const problem = timeoutProblem(timeoutSeconds, limits);
    if (problem) {
      const other = problem.includes("LEASE_SECONDS") ? "LEASE_SECONDS" : "HANDLER_TIMEOUT_SECONDS";
      problems.push({ variables: [names.timeout, other], problem: `${problem} (${names.timeout} defaults to ${DEFAULT_TIMEOUT_SECONDS})` });
    }
  }
  const whole = (name: string, defaultValue: number, min: number, max: number): number | null => {
    const value = wholeNumber(env, name, defaultValue, min, max);
    if (value === null) problems.push({ variables: [name], problem: wholeNumberRange(min, max) });
    return value;
  };
  const concurrency = whole(names.concurrency, DEFAULT_CONCURRENCY, 1, MAX_CONCURRENCY);
  // The same ranges as MAX_ATTEMPTS and RETRY_BASE_SECONDS (index.ts), which they default to.
  const maxAttempts = whole(names.maxAttempts, limits?.maxAttempts ?? FALLBACK.maxAttempts, 1, 50);
  const retryBaseSeconds = whole(names.retryBase, limits?.retryBaseSeconds ?? FALLBACK.retryBaseSeconds, 1, 3_600);
  if (limits && maxAttempts !== null && retryBaseSeconds !== null && longestBackoffSeconds(retryBaseSeconds, maxAttempts) > QUEUE_MAX_DELAY_SECONDS) {
    // Name the destination's var where it is set, else the inbox's it defaulted to.
    const variables = [text(env, names.retryBase) ? names.retryBase : "RETRY_BASE_SECONDS", text(env, names.maxAttempts) ? names.maxAttempts : "MAX_ATTEMPTS"];
    problems.push({ variables, problem: `the longest backoff, retry base · 2^(attempts−2), must not exceed ${QUEUE_MAX_DELAY_SECONDS} s (Queues' 12 h delay limit)` });
  }
  const failures = whole(names.breakerFailures, DEFAULT_BREAKER_FAILURES, 1, MAX_BREAKER_FAILURES);
  const openSeconds = whole(names.breakerOpenSeconds, DEFAULT_BREAKER_OPEN_SECONDS, 1, BREAKER_MAX_OPEN_SECONDS);
  const filterJson = text(env, names.filter) ?? null;
  if (filterJson !== null) {
    // The destination's filter (docs/filters.md), checked here so that a bad one holds nothing back unseen.
    const parsed = isJson(filterJson) ? parseFilter(JSON.parse(filterJson)) : { ok: false as const, problem: "must be JSON" };
    if (!parsed.ok) problems.push({ variables: [names.filter], problem: `is not a filter (docs/filters.md): ${parsed.problem}` });
  }
  if (problems.length > 0 || !url.ok || !secret?.ok || timeoutSeconds === null || concurrency === null) return problems;
  if (maxAttempts === null || retryBaseSeconds === null || failures === null || openSeconds === null) return problems;
  return { name: key.name, url: url.url, key: secret.key, timeoutSeconds, concurrency, maxAttempts, retryBaseSeconds, breaker: { failures, openSeconds }, filterJson };
}

function isJson(value: string): boolean {
  try {
    JSON.parse(value);
    return true;
  } catch {
    return false;
  }
}

/** The first destination first, then by name. */
function byName(a: NamedDestination, b: NamedDestination): number {
  if (a.name === b.name) return 0;
  if (a.name === FIRST_DESTINATION_NAME) return -1;
  if (b.name === FIRST_DESTINATION_NAME) return 1;
  return a.name < b.name ? -1 : 1;
}

/**
 * Reads the forwarding vars of `env`. `limits` are the parsed LEASE_SECONDS,
 * HANDLER_TIMEOUT_SECONDS, MAX_ATTEMPTS and RETRY_BASE_SECONDS, which the destinations stay under
 * or default to; null when those vars are bad themselves (then only each forwarding var's own
 * checks run).
 * @example
 * parseForwarding({ STRIPE_FORWARD_URL: "https://billing.example.com/hooks", STRIPE_FORWARD_SECRET: "whsec_…" }, limits);
 * // { forwarding: { byPrefix: { STRIPE: [{ name: "forward", url, key, timeoutSeconds: 30, concurrency: 10, … }] } }, problems: [] }
 */
export function parseForwarding(env: object, limits: ForwardingLimits | null): { forwarding: ForwardingConfig; problems: ConfigProblem[] } {
  const vars = env as Record<string, unknown>;
  const byPrefix: Record<string, NamedDestination[]> = {};
  const problems: ConfigProblem[] = [];
  const set = Object.keys(vars)
    .sort()
    .filter((name) => text(vars, name) !== undefined)
    .map((name) => ({ name, key: readForwardVar(name) }))
    .filter((entry): entry is { name: string; key: ForwardVar } => entry.key !== null);
  const withUrl = new Set(set.filter(({ key }) => key.setting === "url").map(({ key }) => `${key.prefix}\n${key.name}`));
  for (const { name, key } of set) {
    if (key.varName !== null && RESERVED_NAMES.has(key.varName)) {
      // Only once per destination: on its URL, or on a setting when it has none.
      if (key.setting === "url" || !withUrl.has(`${key.prefix}\n${key.name}`)) {
        problems.push({ variables: [name], problem: `${key.varName} is a reserved word, not a destination name: choose another name (reserved: ${[...RESERVED_NAMES].join(", ")})` });
      }
      continue;
    }
    if (key.setting !== "url") {
      if (!withUrl.has(`${key.prefix}\n${key.name}`)) problems.push({ variables: [name], problem: `is set without ${forwardVarName(key.prefix, key.varName, "URL")}, so it would do nothing` });
      continue;
    }
    const destination = readDestination(vars, key, limits);
    if (Array.isArray(destination)) problems.push(...destination);
    else (byPrefix[key.prefix] ??= []).push(destination);
  }
  for (const destinations of Object.values(byPrefix)) destinations.sort(byName);
  return { forwarding: { byPrefix }, problems };
}
