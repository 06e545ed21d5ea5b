/**
 * Text of others' making (a handler's error, an event type) in a channel that renders markdown:
 * Discord's embed description and a Teams Adaptive Card's TextBlock both turn `[text](url)` into a
 * link and `**…**` into emphasis, so an error could put a clickable link, or a misleading one, into
 * an alert. Each markdown character gets a backslash (CommonMark's escape, which both honour); the
 * text then shows as it was written. Slack's mrkdwn has its own escape (slack.ts).
 */
const MARKDOWN = /[\\`*_~[\]()<>#|!-]/g;

/** `text` with every markdown character escaped. */
export function markdownEscape(text: string): string {
  return text.replace(MARKDOWN, (character) => `\\${character}`);
}
