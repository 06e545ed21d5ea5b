/** Alerting's vars (src/config/alerts.ts): channels by vars alone, problems that name the var and never its value, URLs shown by origin only. */
import { describe, expect, it } from "vitest";
import { describeChannel, parseAlerts, redactedUrl } from "../../src/config/alerts";

const SLACK = "https://hooks.slack.com/services/T000/B000/XXXXsecretXXXX";
const SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const binding = { send: async () => ({ messageId: "m" }) };

describe("alerting's vars", () => {
  it("configure no channel and the default rules when none is set", () => {
    const { alerts, problems } = parseAlerts({});
    expect(problems).toEqual([]);
    expect(alerts.channels).toEqual([]);
    expect(alerts).toMatchObject({ intervalSeconds: 60, reminderHours: 4, sendTimeoutSeconds: 10 });
    expect(alerts.rules).toMatchObject({ failedDeliveries: 1, backlogAgeSeconds: 900, signatureFailures: 20, heartbeatSeconds: 600, databaseSizeMb: 9000 });
  });

  it("configure each channel by its vars", () => {
    const { alerts, problems } = parseAlerts({
      ALERT_SLACK_WEBHOOK_URL: SLACK,
      ALERT_DISCORD_WEBHOOK_URL: "https://discord.com/api/webhooks/1/token",
      ALERT_TEAMS_WEBHOOK_URL: "https://example.webhook.office.com/workflows/x",
      ALERT_WEBHOOK_URL: "https://ops.example.com/alerts",
      ALERT_WEBHOOK_SECRET: SECRET,
      ALERT_EMAIL: binding,
      ALERT_EMAIL_FROM: "alerts@example.com",
      ALERT_EMAIL_TO: "oncall@example.com",
    });
    expect(problems).toEqual([]);
    expect(alerts.channels.map((channel) => channel.kind)).toEqual(["slack", "discord", "teams", "webhook", "email"]);
  });

  it.each([
    [{ ALERT_SLACK_WEBHOOK_URL: "http://hooks.slack.com/services/T/B/secretpath" }, ["ALERT_SLACK_WEBHOOK_URL"]],
    [{ ALERT_DISCORD_WEBHOOK_URL: "not a url secretpath" }, ["ALERT_DISCORD_WEBHOOK_URL"]],
    [{ ALERT_TEAMS_WEBHOOK_URL: "https://user:secretpath@example.com/x" }, ["ALERT_TEAMS_WEBHOOK_URL"]],
    [{ ALERT_WEBHOOK_URL: "https://ops.example.com/secretpath" }, ["ALERT_WEBHOOK_SECRET"]],
    [{ ALERT_WEBHOOK_URL: "https://ops.example.com/a", ALERT_WEBHOOK_SECRET: "secretpath" }, ["ALERT_WEBHOOK_SECRET"]],
    [{ ALERT_EMAIL_FROM: "a@example.com" }, ["ALERT_EMAIL_FROM", "ALERT_EMAIL_TO"]],
    [{ ALERT_EMAIL_FROM: "a@example.com", ALERT_EMAIL_TO: "b@example.com" }, ["ALERT_EMAIL"]],
    [{ ALERT_BACKLOG_AGE_SECONDS: "-1" }, ["ALERT_BACKLOG_AGE_SECONDS"]],
    [{ ALERT_FAILURE_RATE_PERCENT: "101" }, ["ALERT_FAILURE_RATE_PERCENT"]],
    [{ ALERT_INTERVAL_SECONDS: "0" }, ["ALERT_INTERVAL_SECONDS"]],
  ])("refuse %j, naming %j and never the value", (vars, names) => {
    const { problems, alerts } = parseAlerts(vars);
    expect(problems.flatMap((problem) => problem.variables)).toEqual(names);
    expect(JSON.stringify(problems)).not.toContain("secretpath");
    expect(alerts.channels).toEqual([]);
  });

  it("allow plain http to this machine only (a local channel under wrangler dev)", () => {
    expect(parseAlerts({ ALERT_SLACK_WEBHOOK_URL: "http://127.0.0.1:9000/services/x" }).problems).toEqual([]);
  });

  it("show a channel by its kind and origin, never the webhook URL's path", () => {
    const [slack] = parseAlerts({ ALERT_SLACK_WEBHOOK_URL: SLACK }).alerts.channels;
    expect(describeChannel(slack!)).toBe("slack (https://hooks.slack.com/…)");
    expect(redactedUrl(`${SLACK}?token=abc`)).toBe("https://hooks.slack.com/…");
  });
});
