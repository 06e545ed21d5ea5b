/**
 * Alerting's settings (src/alerts): where incidents are told (the channels), and when a rule holds.
 *
 * A channel is configured by vars alone: `ALERT_SLACK_WEBHOOK_URL`, `ALERT_DISCORD_WEBHOOK_URL`,
 * `ALERT_TEAMS_WEBHOOK_URL`, `ALERT_WEBHOOK_URL` with `ALERT_WEBHOOK_SECRET` (signed with Standard
 * Webhooks), and email through a `send_email` binding named `ALERT_EMAIL` with `ALERT_EMAIL_FROM`
 * and `ALERT_EMAIL_TO`. The configured URLs are the only hosts alerting ever fetches.
 *
 * Slack's and Discord's webhook URLs are credentials (their path is the secret): a problem names
 * the var, never its value, and what is shown of a channel (`redactedUrl`) is its origin only.
 *
 * Each rule has a default and a var; 0 turns a rule off.
 */
import { checkForwardSecret, checkForwardUrl } from "./destination";
import { parseWholeNumber, wholeNumberRange } from "./limits";
import type { ConfigProblem } from "./problem";

export type ChannelKind = "slack" | "discord" | "teams" | "webhook" | "email";

/** A configured channel, as checked. */
export type AlertChannel =
  | { readonly kind: "slack" | "discord" | "teams"; readonly url: string }
  | { readonly kind: "webhook"; readonly url: string; readonly key: Uint8Array }
  | { readonly kind: "email"; readonly from: string; readonly to: string };

/** When each rule holds; 0 turns a rule off. */
export interface AlertRules {
  /** Failed deliveries of one (source, subscriber, error) at which an incident opens. */
  readonly failedDeliveries: number;
  /** Failure rate of a source, in percent of what it received over the window. */
  readonly failureRatePercent: number;
  readonly failureRateWindowMinutes: number;
  /** Below this many deliveries in the window, no rate is judged. */
  readonly failureRateMinDeliveries: number;
  /** Age of the oldest waiting delivery. */
  readonly backlogAgeSeconds: number;
  /** Signature failures of a source within the window. */
  readonly signatureFailures: number;
  readonly signatureWindowMinutes: number;
  /** A heartbeat (the cron's sweep, the consumer's batches) older than this is a stopped part. */
  readonly heartbeatSeconds: number;
  /** The database's size (MB, 10^6 bytes) at which it is near its limit (D1: 10 GB on Paid, 500 MB on Free). */
  readonly databaseSizeMb: number;
}

export interface AlertsConfig {
  readonly channels: readonly AlertChannel[];
  readonly rules: AlertRules;
  /** How often rules are evaluated (the sweeper's beat decides: at most this often). */
  readonly intervalSeconds: number;
  /** While an incident stays open, a reminder at most this often; 0: none. */
  readonly reminderHours: number;
  /** One channel's send may take this long. */
  readonly sendTimeoutSeconds: number;
}

/** The vars of the channels. */
export const CHANNEL_VARS = {
  slack: "ALERT_SLACK_WEBHOOK_URL",
  discord: "ALERT_DISCORD_WEBHOOK_URL",
  teams: "ALERT_TEAMS_WEBHOOK_URL",
  webhook: "ALERT_WEBHOOK_URL",
  webhookSecret: "ALERT_WEBHOOK_SECRET",
  emailBinding: "ALERT_EMAIL",
  emailFrom: "ALERT_EMAIL_FROM",
  emailTo: "ALERT_EMAIL_TO",
} as const;

/** Each number's var, default and range. */
const NUMBERS = {
  failedDeliveries: ["ALERT_FAILED_DELIVERIES", 1, 0, 1_000_000],
  failureRatePercent: ["ALERT_FAILURE_RATE_PERCENT", 50, 0, 100],
  failureRateWindowMinutes: ["ALERT_FAILURE_RATE_WINDOW_MINUTES", 15, 1, 1_440],
  failureRateMinDeliveries: ["ALERT_FAILURE_RATE_MIN_DELIVERIES", 20, 1, 1_000_000],
  backlogAgeSeconds: ["ALERT_BACKLOG_AGE_SECONDS", 900, 0, 604_800],
  signatureFailures: ["ALERT_SIGNATURE_FAILURES", 20, 0, 1_000_000],
  signatureWindowMinutes: ["ALERT_SIGNATURE_WINDOW_MINUTES", 5, 1, 1_440],
  heartbeatSeconds: ["ALERT_HEARTBEAT_SECONDS", 600, 0, 604_800],
  databaseSizeMb: ["ALERT_DATABASE_SIZE_MB", 9_000, 0, 10_000_000],
  intervalSeconds: ["ALERT_INTERVAL_SECONDS", 60, 1, 3_600],
  reminderHours: ["ALERT_REMINDER_HOURS", 4, 0, 168],
  sendTimeoutSeconds: ["ALERT_SEND_TIMEOUT_SECONDS", 10, 1, 60],
} as const;

/** A var's text, or undefined when unset or empty. */
function text(env: Record<string, unknown>, name: string): string | undefined {
  const value = env[name];
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}

/**
 * Reads the alerting vars of `env`: the settings, and what is wrong with them (each problem names
 * its var, never a value).
 * @example
 * parseAlerts({ ALERT_SLACK_WEBHOOK_URL: "https://hooks.slack.com/services/T0/B0/x" }).alerts.channels;
 * // [{ kind: "slack", url: "https://hooks.slack.com/services/T0/B0/x" }]
 */
export function parseAlerts(env: object): { alerts: AlertsConfig; problems: ConfigProblem[] } {
  const vars = env as Record<string, unknown>;
  const problems: ConfigProblem[] = [];
  const numbers = {} as Record<keyof typeof NUMBERS, number>;
  for (const [key, [name, defaultValue, min, max]] of Object.entries(NUMBERS) as [keyof typeof NUMBERS, (typeof NUMBERS)[keyof typeof NUMBERS]][]) {
    const value = text(vars, name);
    const parsed = value === undefined ? defaultValue : parseWholeNumber(value, min, max);
    if (parsed === null) problems.push({ variables: [name], problem: wholeNumberRange(min, max) });
    numbers[key] = parsed ?? defaultValue;
  }

  const channels: AlertChannel[] = [];
  for (const kind of ["slack", "discord", "teams"] as const) {
    const value = text(vars, CHANNEL_VARS[kind]);
    if (value === undefined) continue;
    const url = checkForwardUrl(value);
    if (url.ok) channels.push({ kind, url: url.url });
    else problems.push({ variables: [CHANNEL_VARS[kind]], problem: url.problem.replace(" (the forwarded request is signed instead)", "") });
  }
  const webhookUrl = text(vars, CHANNEL_VARS.webhook);
  if (webhookUrl !== undefined) {
    const url = checkForwardUrl(webhookUrl);
    const secretText = text(vars, CHANNEL_VARS.webhookSecret);
    const secret = secretText === undefined ? null : checkForwardSecret(secretText);
    if (!url.ok) problems.push({ variables: [CHANNEL_VARS.webhook], problem: url.problem });
    if (secret === null) problems.push({ variables: [CHANNEL_VARS.webhookSecret], problem: `must be set when ${CHANNEL_VARS.webhook} is (whsec_ followed by base64)` });
    else if (!secret.ok) problems.push({ variables: [CHANNEL_VARS.webhookSecret], problem: secret.problem });
    if (url.ok && secret?.ok) channels.push({ kind: "webhook", url: url.url, key: secret.key });
  }
  const from = text(vars, CHANNEL_VARS.emailFrom);
  const to = text(vars, CHANNEL_VARS.emailTo);
  if (from !== undefined || to !== undefined) {
    if (from === undefined || to === undefined) {
      problems.push({ variables: [CHANNEL_VARS.emailFrom, CHANNEL_VARS.emailTo], problem: "must be set together (with a send_email binding named ALERT_EMAIL)" });
    } else if (!hasBinding(vars[CHANNEL_VARS.emailBinding])) {
      problems.push({ variables: [CHANNEL_VARS.emailBinding], problem: "a send_email binding named ALERT_EMAIL is needed for ALERT_EMAIL_FROM and ALERT_EMAIL_TO" });
    } else {
      channels.push({ kind: "email", from, to });
    }
  }

  const { intervalSeconds, reminderHours, sendTimeoutSeconds, ...rules } = numbers;
  return { alerts: { channels, rules, intervalSeconds, reminderHours, sendTimeoutSeconds }, problems };
}

function hasBinding(value: unknown): boolean {
  return typeof value === "object" && value !== null && typeof (value as { send?: unknown }).send === "function";
}

/**
 * What may be shown of a channel: its kind and its URL's origin, never the path (a Slack or
 * Discord webhook URL's path is its secret) or the query.
 * @example
 * describeChannel({ kind: "slack", url: "https://hooks.slack.com/services/T0/B0/secret" }); // "slack (https://hooks.slack.com/…)"
 */
export function describeChannel(channel: AlertChannel): string {
  return channel.kind === "email" ? `email (to ${channel.to})` : `${channel.kind} (${redactedUrl(channel.url)})`;
}

/** A URL's origin and an ellipsis: what logs and pages may show of a webhook URL. */
export function redactedUrl(url: string): string {
  try {
    return `${new URL(url).origin}/…`;
  } catch {
    return "(unparseable URL)";
  }
}
