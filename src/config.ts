/**
 * Runtime settings, parsed once per environment and failing closed.
 *
 * Numeric vars come from `wrangler.toml` `[vars]` (or `.dev.vars` locally) as strings; a value
 * that is not a whole number in range is a startup error that names the variable, rather than
 * a silent fallback. Webhook secrets are looked up per source in secrets.ts.
 */
import { z } from "zod";

/** A whole-number var with a default, bounded so a typo cannot disable a safety limit. */
function wholeNumber(defaultValue: number, min: number, max: number) {
  return z
    .string()
    .trim()
    .regex(/^\d+$/, "must be a whole number")
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((value) => value ?? defaultValue);
}

const DAY_SECONDS = 86_400;

const varsSchema = z.object({
  // D1 caps a row at 2 MB; 1 MiB leaves room for the other columns.
  MAX_BODY_BYTES: wholeNumber(1_048_576, 1, 1_900_000),
  MAX_ATTEMPTS: wholeNumber(5, 1, 50),
  RETRY_BASE_SECONDS: wholeNumber(2, 1, 3_600),
  LEASE_SECONDS: wholeNumber(60, 1, 900),
  // A consumer invocation may run 15 minutes of wall clock; 840 s leaves a minute for the commit.
  // The lease is renewed while a handler runs, so this may exceed LEASE_SECONDS.
  HANDLER_TIMEOUT_SECONDS: wholeNumber(300, 1, 840),
  RETENTION_DAYS: wholeNumber(30, 1, 3_650),
  BODY_RETENTION_DAYS: wholeNumber(7, 0, 3_650),
  // A delivery still `received` this long after its last change was never (re-)enqueued.
  SWEEP_AFTER_SECONDS: wholeNumber(60, 1, DAY_SECONDS),
  // > 0: a Durable Object alarm runs the sweeper this often (local dev has no cron). 0: cron only.
  SWEEP_INTERVAL_SECONDS: wholeNumber(0, 0, DAY_SECONDS),
  PUBLIC_BASE_URL: z.url().optional(),
  ADMIN_TOKEN: z.string().optional(),
});

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
  readonly sweepIntervalSeconds: number;
  readonly publicBaseUrl: string | undefined;
  readonly adminToken: string | undefined;
}

/** Thrown when a var is malformed: the inbox refuses to run rather than guess. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

const parsed = new WeakMap<object, InboxConfig>();

/**
 * Parses the vars of `env` once (cached per env object) and returns the settings.
 * @throws ConfigError naming every bad var.
 */
export function loadConfig(env: object): InboxConfig {
  const cached = parsed.get(env);
  if (cached) return cached;
  const result = varsSchema.safeParse(env);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
    throw new ConfigError(`invalid configuration: ${problems.join("; ")}`);
  }
  const vars = result.data;
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
    publicBaseUrl: vars.PUBLIC_BASE_URL,
    adminToken: vars.ADMIN_TOKEN === "" ? undefined : vars.ADMIN_TOKEN,
  };
  parsed.set(env, config);
  return config;
}
