/**
 * Microsoft Teams: an Adaptive Card in a `message` (what a Teams Workflows "post to a channel when
 * a webhook request is received" trigger takes, and what the older incoming-webhook connectors
 * took too): `{ type: "message", attachments: [{ contentType:
 * "application/vnd.microsoft.card.adaptive", content: { type: "AdaptiveCard", version, body } }] }`,
 * with a FactSet for the facts and an Action.OpenUrl per link. A TextBlock renders markdown: the
 * summary (it may hold a handler's error) is escaped (markdown.ts).
 */
import { messageFacts, messageTitle, type AlertMessage } from "../message";
import { markdownEscape } from "./markdown";

export const ADAPTIVE_CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive";

export function teamsPayload(message: AlertMessage): Record<string, unknown> {
  const actions = [
    message.link && { type: "Action.OpenUrl", title: "Open the dashboard's list", url: message.link },
    message.incidentLink && { type: "Action.OpenUrl", title: "The incident", url: message.incidentLink },
  ].filter(Boolean);
  return {
    type: "message",
    attachments: [
      {
        contentType: ADAPTIVE_CARD_CONTENT_TYPE,
        contentUrl: null,
        content: {
          $schema: "http://adaptivecards.io/schemas/adaptive-card.json",
          type: "AdaptiveCard",
          version: "1.4",
          body: [
            { type: "TextBlock", text: messageTitle(message), weight: "Bolder", size: "Medium", wrap: true },
            { type: "TextBlock", text: markdownEscape(message.summary), wrap: true },
            { type: "FactSet", facts: messageFacts(message).map((fact) => ({ title: fact.name, value: fact.value })) },
          ],
          ...(actions.length > 0 ? { actions } : {}),
        },
      },
    ],
  };
}
