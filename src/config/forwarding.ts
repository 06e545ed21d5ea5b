/**
 * Forwarding by configuration: `<SOURCE>_FORWARD_URL` (a var) forwards every delivery of that
 * source, signed with the secret `<SOURCE>_FORWARD_SECRET`; `<SOURCE>_FORWARD_TIMEOUT_SECONDS`
 * and `<SOURCE>_FORWARD_CONCURRENCY` are optional.
 *
 * Read with the other vars (index.ts), so a bad one is `config_invalid` like any other: the
 * inbox answers 503, `GET /health` names the var, and queued deliveries wait; none is sent to a
 * guess. Every `<NAME>_FORWARD_URL` var is checked, not only those of a source, so that the vars
 * a `forward()` handler reads (docs/forwarding.md: name them the same way) are checked before any delivery
 * too. An empty value counts as unset, as for webhook secrets.
 */
import { MAX_HANDLER_TIMEOUT_SECONDS, parseWholeNumber, wholeNumberRange } from "./limits";
import type { ConfigProblem } from "./problem";
import { sourceVarPrefix } from "./secrets";
import {
  checkForwardSecret,
  checkForwardUrl,
  DEFAULT_CONCURRENCY,
  DEFAULT_TIMEOUT_SECONDS,
  MAX_CONCURRENCY,
  timeoutProblem,
  type ForwardDestination,
  type TimeoutLimits,
} from "./destination";

/**
 * The forwarding of each source that has one, by the source's var prefix (`stripe` → `STRIPE`):
 * every `<NAME>_FORWARD_URL` is read, and a source finds its own by its name's prefix, so the
 * config needs no list of sources.
 */
export interface ForwardingConfig {
  readonly byPrefix: Readonly<Record<string, ForwardDestination>>;
}

/** The vars of a destination named `prefix` (a source's var prefix, e.g. `STRIPE`). */
export function forwardVarNames(prefix: string) {
  return {
    url: `${prefix}_FORWARD_URL`,
    secret: `${prefix}_FORWARD_SECRET`,
    timeout: `${prefix}_FORWARD_TIMEOUT_SECONDS`,
    concurrency: `${prefix}_FORWARD_CONCURRENCY`,
  };
}

/** The forwarding of `source`, if it has one. */
export function destinationOf(forwarding: ForwardingConfig, source: string): ForwardDestination | undefined {
  const prefix = sourceVarPrefix(source);
  return Object.hasOwn(forwarding.byPrefix, prefix) ? forwarding.byPrefix[prefix] : undefined;
}

const URL_VAR = /^([A-Z0-9_]+)_FORWARD_URL$/;

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

/** One destination's vars: the destination, or what is wrong with them. */
function readDestination(env: Record<string, unknown>, prefix: string, limits: TimeoutLimits | null): ForwardDestination | ConfigProblem[] {
  const names = forwardVarNames(prefix);
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
  const concurrency = wholeNumber(env, names.concurrency, DEFAULT_CONCURRENCY, 1, MAX_CONCURRENCY);
  if (concurrency === null) problems.push({ variables: [names.concurrency], problem: wholeNumberRange(1, MAX_CONCURRENCY) });
  if (problems.length > 0 || !url.ok || !secret?.ok || timeoutSeconds === null || concurrency === null) return problems;
  return { url: url.url, key: secret.key, timeoutSeconds, concurrency };
}

/**
 * Reads the forwarding vars of `env`. `limits` are the parsed LEASE_SECONDS and
 * HANDLER_TIMEOUT_SECONDS, which the timeouts must stay under; null when those vars are bad
 * themselves (then only each forwarding var's own checks run).
 * @example
 * parseForwarding({ STRIPE_FORWARD_URL: "https://billing.example.com/hooks", STRIPE_FORWARD_SECRET: "whsec_…" }, limits);
 * // { forwarding: { byPrefix: { STRIPE: { url, key, timeoutSeconds: 30, concurrency: 10 } } }, problems: [] }
 */
export function parseForwarding(env: object, limits: TimeoutLimits | null): { forwarding: ForwardingConfig; problems: ConfigProblem[] } {
  const vars = env as Record<string, unknown>;
  const byPrefix: Record<string, ForwardDestination> = {};
  const problems: ConfigProblem[] = [];
  for (const name of Object.keys(vars).sort()) {
    const prefix = URL_VAR.exec(name)?.[1];
    if (prefix === undefined || text(vars, name) === undefined) continue;
    const destination = readDestination(vars, prefix, limits);
    if (Array.isArray(destination)) problems.push(...destination);
    else byPrefix[prefix] = destination;
  }
  return { forwarding: { byPrefix }, problems };
}
