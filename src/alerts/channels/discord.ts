/**
 * Discord's webhook (https://discord.com/developers/docs/resources/webhook#execute-webhook): a JSON
 * body with one embed (title, description, url, color, fields, timestamp). `allowed_mentions` with
 * no `parse` keeps text from a handler's error from pinging anyone (`@everyone`). Discord answers
 * 204 No Content. Its limits are kept: title 256, description 4096, field values 1024. The
 * description renders markdown: the summary (it may hold a handler's error) is escaped (markdown.ts).
 */
import { messageFacts, messageTitle, type AlertMessage } from "../message";
import { markdownEscape } from "./markdown";

const COLORS = { opened: 0xd93f0b, reminder: 0xfbca04, resolved: 0x0e8a16 } as const;

export function discordPayload(message: AlertMessage): Record<string, unknown> {
  return {
    username: "webhook-inbox",
    allowed_mentions: { parse: [] },
    embeds: [
      {
        title: messageTitle(message).slice(0, 256),
        description: markdownEscape(message.summary).slice(0, 4096),
        ...(message.link ? { url: message.link } : {}),
        color: COLORS[message.kind],
        fields: [
          ...messageFacts(message).map((fact) => ({ name: fact.name, value: fact.value.slice(0, 1024), inline: true })),
          ...(message.incidentLink ? [{ name: "Incident", value: message.incidentLink, inline: false }] : []),
        ],
        timestamp: message.resolvedAt ?? message.since,
      },
    ],
  };
}
