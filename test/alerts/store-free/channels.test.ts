/**
 * Each channel's payload as its service documents it (the e2e test sends them to real servers):
 * Slack's text and blocks with mrkdwn escaped, Discord's embed without mentions, Teams' Adaptive
 * Card, the generic webhook's envelope, email's message; what every one says: what, since when, how
 * many, the dashboard's link.
 */
import { describe, expect, it } from "vitest";
import { discordPayload } from "../../../src/alerts/channels/discord";
import { emailMessage } from "../../../src/alerts/channels/email";
import { slackEscape, slackPayload } from "../../../src/alerts/channels/slack";
import { ADAPTIVE_CARD_CONTENT_TYPE, teamsPayload } from "../../../src/alerts/channels/teams";
import { webhookPayload } from "../../../src/alerts/channels/webhook";
import type { AlertMessage } from "../../../src/alerts/message";

const message: AlertMessage = {
  kind: "opened",
  incidentId: 7,
  rule: "delivery_failed",
  source: "stripe",
  subscriber: null,
  summary: "200 deliveries of stripe failed: <!channel> @everyone boom & <https://evil.example|click>",
  count: 200,
  since: "2026-12-06T10:00:00.000Z",
  resolvedAt: null,
  link: "https://inbox.example.com/ui/deliveries?status=failed&source=stripe",
  incidentLink: "https://inbox.example.com/ui/incidents/7",
};

describe("the channels' payloads", () => {
  it("Slack: text and blocks, the error's text escaped so that it neither links nor pings", () => {
    const payload = slackPayload(message) as { text: string; blocks: { type: string; text?: { type: string; text: string }; elements?: { text: string }[] }[] };
    expect(payload.blocks.map((block) => block.type)).toEqual(["header", "section", "section", "context"]);
    expect(payload.blocks[0]!.text).toEqual({ type: "plain_text", text: "Opened: Deliveries failed (stripe)" });
    expect(payload.blocks[1]!.text!.text).toBe(slackEscape(message.summary));
    expect(payload.blocks[1]!.text!.text).not.toMatch(/<!channel>|<https:/);
    expect(payload.text).toContain("&lt;!channel&gt;");
    expect(payload.blocks[3]!.elements![0]!.text).toContain(`<${message.link}|Open the dashboard's list>`);
  });

  it("Discord: one embed with the facts, and no mentions allowed", () => {
    const payload = discordPayload(message) as { allowed_mentions: unknown; embeds: { title: string; url: string; fields: { name: string; value: string }[] }[] };
    expect(payload.allowed_mentions).toEqual({ parse: [] });
    expect(payload.embeds).toHaveLength(1);
    expect(payload.embeds[0]).toMatchObject({ title: "Opened: Deliveries failed (stripe)", url: message.link });
    expect(payload.embeds[0]!.fields.map((field) => [field.name, field.value])).toEqual([
      ["Since", message.since],
      ["How many", "200"],
      ["Incident", message.incidentLink],
    ]);
  });

  it("Teams: a message with one Adaptive Card", () => {
    const payload = teamsPayload({ ...message, kind: "resolved", resolvedAt: "2026-12-06T11:00:00.000Z" }) as any;
    expect(payload.type).toBe("message");
    expect(payload.attachments).toHaveLength(1);
    expect(payload.attachments[0].contentType).toBe(ADAPTIVE_CARD_CONTENT_TYPE);
    expect(payload.attachments[0].content).toMatchObject({ type: "AdaptiveCard", version: "1.4" });
    expect(payload.attachments[0].content.body[0].text).toBe("Resolved: Deliveries failed (stripe)");
    expect(payload.attachments[0].content.body[2].facts).toContainEqual({ title: "Resolved", value: "2026-12-06T11:00:00.000Z" });
    expect(payload.attachments[0].content.actions.map((action: { url: string }) => action.url)).toEqual([message.link, message.incidentLink]);
  });

  it("Discord and Teams: a handler's error cannot make a link or emphasis in the text they render as markdown", () => {
    const hostile = { ...message, summary: "boom: [log in again](https://evil.example/login) **urgent** _now_ `x` \\ ok" };
    const discord = (discordPayload(hostile) as { embeds: { description: string }[] }).embeds[0]!.description;
    const teams = (teamsPayload(hostile) as any).attachments[0].content.body[1].text as string;
    for (const text of [discord, teams]) {
      expect(text).toBe("boom: \\[log in again\\]\\(https://evil.example/login\\) \\*\\*urgent\\*\\* \\_now\\_ \\`x\\` \\\\ ok");
      // No unescaped markdown character is left: each is preceded by a backslash that is itself not escaped.
      expect(text.replace(/\\./g, "")).not.toMatch(/[[\]()*_`\\]/);
    }
  });

  it("the generic webhook: the Standard Webhooks envelope around the message", () => {
    expect(webhookPayload(message, "2026-12-06T10:01:00.000Z")).toEqual({ type: "incident.opened", timestamp: "2026-12-06T10:01:00.000Z", data: message });
  });

  it("email: a plain-text message with the subject, summary, facts and links", () => {
    const mail = emailMessage(message, "alerts@example.com", "oncall@example.com");
    expect(mail).toMatchObject({ from: "alerts@example.com", to: "oncall@example.com", subject: "[webhook-inbox] Opened: Deliveries failed (stripe)" });
    expect(mail.text).toContain("How many: 200");
    expect(mail.text).toContain(`Dashboard: ${message.link}`);
  });
});
