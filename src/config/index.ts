/**
 * Runtime settings, parsed once per environment and failing closed.
 *
 * Numeric vars come from `wrangler.toml` `[vars]` (or `.dev.vars` locally) as strings; a value
 * that is not a whole number in range is a startup error that names the variable, rather than
 * a silent fallback. Vars that only make sense together are then checked together. Webhook
 * secrets are looked up per source in secrets.ts; the forwarding vars are read here too
 * (forwarding.ts), so that a bad one stops the inbox like any other.
 *
 * At the bottom of the house: every feature reads its settings here, and this imports no feature.
 *
 * A bad config never fails a delivery: the HTTP routes answer 503 `config_invalid`, queue
 * batches wait and retry, and the sweeper's heartbeat keeps beating until it is fixed.
 */
import { z } from "zod";
import { parseAlerts, type AlertsConfig } from "./alerts";
import { parseForwarding, type ForwardingConfig } from "./forwarding";
import { longestBackoffSeconds, MAX_BODY_BYTES_CEILING, MAX_HANDLER_TIMEOUT_SECONDS, parseWholeNumber, QUEUE_MAX_DELAY_SECONDS, wholeNumberRange } from "./limits";
import type { ConfigProblem } from "./problem";
import { parseSourceFilters, type SourceFiltersConfig } from "./source-filters";

export { MAX_BODY_BYTES_CEILING, MAX_HANDLER_TIMEOUT_SECONDS, QUEUE_MAX_DELAY_SECONDS, longestBackoffSeconds } from "./limits";

/**
 * A whole-number var with a default, bounded so a typo cannot disable a safety limit. The
 * messages are ours, never zod's defaults, and name no value: they reach `GET /health`.
 */
function wholeNumber(defaultValue: number, min: number, max: number, why = "") {
  const range = `${wholeNumberRange(min, max)}${why}`;
  return z
    .string()
    .transform((text, ctx) => {
      const value = parseWholeNumber(text, min, max);
      if (value === null) {
        ctx.addIssue({ code: "custom", message: range });
        return z.NEVER;
      }
      return value;
    })
    .optional()
    .transform((value) => value ?? defaultValue);
}

const DAY_SECONDS = 86_400;

/**
 * Retention is also the window in which a provider's retry of a delivery is still recognised as a
 * duplicate: a row deleted earlier lets a late retry run again. Retry windows
 * (/work/shared/notes/signatures.md): Stripe retries "for up to three days" in live mode, Paddle
 * 60 times over 3 days, GitHub allows manual redelivery for 3 days (7 on Enterprise Server),
 * Shopify 4 hours, Twilio Event Streams 4 hours, Svix ≈ 28 hours, and the Standard Webhooks spec's
 * example schedule ends 75 h 35 min after the first attempt. 4 days covers every automatic
 * schedule listed, with the margin of a day that 3 would not leave for Stripe's last retry.
 */
export const MIN_RETENTION_DAYS = 4;

const varsSchema = z.object({
  // D1 caps a row at 2 MB; 1 MiB leaves room for the other columns.
  MAX_BODY_BYTES: wholeNumber(1_048_576, 1, MAX_BODY_BYTES_CEILING),
  // With RETRY_BASE_SECONDS, also bounded by QUEUE_MAX_DELAY_SECONDS (checked below).
  MAX_ATTEMPTS: wholeNumber(5, 1, 50),
  RETRY_BASE_SECONDS: wholeNumber(2, 1, 3_600),
  LEASE_SECONDS: wholeNumber(60, 1, 900),
  // The lease is renewed while a handler runs, so this may exceed LEASE_SECONDS.
  HANDLER_TIMEOUT_SECONDS: wholeNumber(300, 1, MAX_HANDLER_TIMEOUT_SECONDS),
  RETENTION_DAYS: wholeNumber(30, MIN_RETENTION_DAYS, 3_650, " (fewer days would be shorter than the providers' retry windows)"),
  BODY_RETENTION_DAYS: wholeNumber(7, 0, 3_650),
  // A delivery still `received` this long after its last change was never (re-)enqueued.
  SWEEP_AFTER_SECONDS: wholeNumber(60, 1, DAY_SECONDS),
  // The Sweeper object's heartbeat alarm (sweeper.ts); 0 turns it off. After a crash of the local
  // runtime, recovery takes SWEEP_AFTER_SECONDS + up to one beat + the work: 10 s keeps it within
  // 90 s with room (20 s measured 79 s). Under a working cron the heartbeat only watches, once a minute.
  SWEEP_INTERVAL_SECONDS: wholeNumber(10, 0, DAY_SECONDS),
  // How long any one database call may take before it is an infrastructure error (store/timeout.ts).
  STORE_TIMEOUT_SECONDS: wholeNumber(30, 1, 300),
  PUBLIC_BASE_URL: z.url("must be an absolute URL").optional(),
  ADMIN_TOKEN: z.string("must be a string").optional(),
});

type Vars = z.infer<typeof varsSchema>;

/** The parsed settings every part of the inbox reads. */
export interface InboxConfig {
  readonly maxBodyBytes: number;
  readonly maxAttempts: number;
  readonly retryBaseSeconds: number;
  readonly leaseSeconds: number;
  /** How long a handler may run before its attempt is abandoned as a retryable failure. */
  readonly handlerTimeoutSeconds: number;
  readonly retentionDays: number;
  readonly bodyRetentionDays: number;
  readonly sweepAfterSeconds: number;
  /** The heartbeat's interval; 0: no heartbeat (the cron alone sweeps). */
  readonly sweepIntervalSeconds: number;
  /** How long one database call may take (store/timeout.ts). */
  readonly storeTimeoutSeconds: number;
  readonly publicBaseUrl: string | undefined;
  readonly adminToken: string | undefined;
  /** The sources whose deliveries are forwarded (`<SOURCE>_FORWARD_URL`, forwarding.ts). */
  readonly forwarding: ForwardingConfig;
  /** The sources whose deliveries are filtered at receipt (`<SOURCE>_FILTER`, source-filters.ts). */
  readonly sourceFilters: SourceFiltersConfig;
  /** Alerting's channels and rules (`ALERT_*`, alerts.ts). */
  readonly alerts: AlertsConfig;
}

export type { ConfigProblem } from "./problem";

/** Thrown when a var is malformed: the inbox refuses to run rather than guess. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";

  constructor(readonly problems: readonly ConfigProblem[]) {
    super(`invalid configuration: ${problems.map((p) => `${p.variables.join(", ")}: ${p.problem}`).join("; ")}`);
  }

  /** Every var named by a problem, once each. */
  get variables(): string[] {
    return [...new Set(this.problems.flatMap((p) => p.variables))];
  }
}

/**
 * The checks that need several vars. Each var is already in range, which also bounds every
 * look-back the sweeper computes (at most SWEEP_AFTER_SECONDS + 12 h + LEASE_SECONDS, and
 * RETENTION_DAYS ≤ 10 years), so its `new Date(now − …)` can never leave Date's range.
 */
function combinedProblems(vars: Vars): ConfigProblem[] {
  const problems: ConfigProblem[] = [];
  // The wait before the last attempt; Queues refuses a longer retry delay (and MAX_ATTEMPTS ≥ 44
  // once made every sweep throw with a date before year −271821).
  if (longestBackoffSeconds(vars.RETRY_BASE_SECONDS, vars.MAX_ATTEMPTS) > QUEUE_MAX_DELAY_SECONDS) {
    problems.push({
      variables: ["RETRY_BASE_SECONDS", "MAX_ATTEMPTS"],
      problem: `the longest backoff, RETRY_BASE_SECONDS · 2^(MAX_ATTEMPTS−2), must not exceed ${QUEUE_MAX_DELAY_SECONDS} s (Queues' 12 h delay limit)`,
    });
  }
  // Bodies are cleared before their row is deleted; a longer body retention could never apply.
  if (vars.BODY_RETENTION_DAYS > vars.RETENTION_DAYS) {
    problems.push({ variables: ["BODY_RETENTION_DAYS", "RETENTION_DAYS"], problem: "BODY_RETENTION_DAYS must not exceed RETENTION_DAYS" });
  }
  return problems;
}

const parsed = new WeakMap<object, InboxConfig>();

/**
 * Parses the vars of `env` once (cached per env object) and returns the settings.
 * @throws ConfigError naming every bad var (each var's own checks first, then the combined ones).
 * @example
 * loadConfig({ MAX_ATTEMPTS: "8" }).maxAttempts; // 8
 * loadConfig({ RETENTION_DAYS: "1" }); // throws ConfigError: RETENTION_DAYS: must be a whole number from 4 to 3650 …
 */
export function loadConfig(env: object): InboxConfig {
  const cached = parsed.get(env);
  if (cached) return cached;
  const result = varsSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => ({ variables: [issue.path.join(".")], problem: issue.message }));
    throw new ConfigError([...problems, ...parseForwarding(env, null).problems, ...parseSourceFilters(env).problems, ...parseAlerts(env).problems]);
  }
  const vars = result.data;
  const forwarding = parseForwarding(env, {
    leaseSeconds: vars.LEASE_SECONDS,
    handlerTimeoutSeconds: vars.HANDLER_TIMEOUT_SECONDS,
    maxAttempts: vars.MAX_ATTEMPTS,
    retryBaseSeconds: vars.RETRY_BASE_SECONDS,
  });
  const sourceFilters = parseSourceFilters(env);
  const alerts = parseAlerts(env);
  const problems = [...combinedProblems(vars), ...forwarding.problems, ...sourceFilters.problems, ...alerts.problems];
  if (problems.length > 0) throw new ConfigError(problems);
  const config: InboxConfig = {
    maxBodyBytes: vars.MAX_BODY_BYTES,
    maxAttempts: vars.MAX_ATTEMPTS,
    retryBaseSeconds: vars.RETRY_BASE_SECONDS,
    leaseSeconds: vars.LEASE_SECONDS,
    handlerTimeoutSeconds: vars.HANDLER_TIMEOUT_SECONDS,
    retentionDays: vars.RETENTION_DAYS,
    bodyRetentionDays: vars.BODY_RETENTION_DAYS,
    sweepAfterSeconds: vars.SWEEP_AFTER_SECONDS,
    sweepIntervalSeconds: vars.SWEEP_INTERVAL_SECONDS,
    storeTimeoutSeconds: vars.STORE_TIMEOUT_SECONDS,
    publicBaseUrl: vars.PUBLIC_BASE_URL,
    adminToken: vars.ADMIN_TOKEN === "" ? undefined : vars.ADMIN_TOKEN,
    forwarding: forwarding.forwarding,
    sourceFilters: sourceFilters.filters,
    alerts: alerts.alerts,
  };
  parsed.set(env, config);
  return config;
}

/**
 * The settings, or the ConfigError that explains why there are none: for the places that must
 * keep going with a bad config (health, queue batches, alarms) rather than throw.
 * @example
 * const config = checkConfig(env);
 * if (config instanceof ConfigError) return retryLater(config.message);
 */
export function checkConfig(env: object): InboxConfig | ConfigError {
  try {
    return loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
}
