/**
 * Slack's incoming webhook (https://api.slack.com/messaging/webhooks): a JSON body with `text`
 * (the notification's fallback) and `blocks` (Block Kit: a header, the summary as mrkdwn, the
 * facts as fields, the links). Slack answers 200 `ok`.
 *
 * mrkdwn reads `&`, `<` and `>` as control characters (`<url|label>` is a link, `<!channel>` pings
 * everyone): text from a handler's error is escaped as Slack documents, so it can neither link nor ping.
 */
import { messageFacts, messageText, messageTitle, type AlertMessage } from "../message";

/** Slack's own escaping for text in mrkdwn. */
export function slackEscape(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** The webhook's body for `message`. */
export function slackPayload(message: AlertMessage): Record<string, unknown> {
  const links = [message.link && `<${message.link}|Open the dashboard's list>`, message.incidentLink && `<${message.incidentLink}|The incident>`].filter(Boolean);
  return {
    text: slackEscape(messageText(message)),
    blocks: [
      { type: "header", text: { type: "plain_text", text: messageTitle(message).slice(0, 150) } },
      { type: "section", text: { type: "mrkdwn", text: slackEscape(message.summary).slice(0, 3000) } },
      { type: "section", fields: messageFacts(message).map((fact) => ({ type: "mrkdwn", text: `*${fact.name}*\n${slackEscape(fact.value)}` })) },
      ...(links.length > 0 ? [{ type: "context", elements: [{ type: "mrkdwn", text: links.join(" · ") }] }] : []),
    ],
  };
}
