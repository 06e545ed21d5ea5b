/**
 * Sends one message to one channel, bounded by a timeout, to the configured URL only (the vars are
 * the allow-list: nothing here builds a URL). The result is a value: the outbox decides what a
 * failure means (outbox.ts). Errors never name the URL (Slack's and Discord's are credentials).
 */
import type { AlertChannel } from "../../config/alerts";
import { isoTime } from "../../store/clock";
import type { AlertMessage } from "../message";
import { discordPayload } from "./discord";
import { emailBinding, emailMessage } from "./email";
import { slackPayload } from "./slack";
import { teamsPayload } from "./teams";
import { webhookHeaders, webhookPayload } from "./webhook";

export type SendResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

/** What a message goes out with: the outbox row's id (the webhook's `webhook-id`), the time. */
export interface SendContext {
  readonly env: object;
  readonly messageId: number;
  readonly nowMs: number;
  readonly timeoutMs: number;
}

/** The channel's name as the outbox stores it: one row per message and channel. */
export function channelName(channel: AlertChannel): string {
  return channel.kind;
}

/**
 * Sends `message` to `channel`.
 * @example
 * await sendAlert({ kind: "slack", url }, message, { env, messageId: 7, nowMs: Date.now(), timeoutMs: 10_000 }); // { ok: true }
 */
export async function sendAlert(channel: AlertChannel, message: AlertMessage, context: SendContext): Promise<SendResult> {
  const signal = AbortSignal.timeout(context.timeoutMs);
  try {
    if (channel.kind === "email") {
      const binding = emailBinding(context.env);
      if (!binding) return { ok: false, error: "the ALERT_EMAIL binding is gone" };
      await withSignal(binding.send(emailMessage(message, channel.from, channel.to)), signal);
      return { ok: true };
    }
    const payload =
      channel.kind === "slack" ? slackPayload(message)
      : channel.kind === "discord" ? discordPayload(message)
      : channel.kind === "teams" ? teamsPayload(message)
      : webhookPayload(message, isoTime(context.nowMs));
    const body = new TextEncoder().encode(JSON.stringify(payload));
    const headers: Record<string, string> = { "content-type": "application/json", "user-agent": "webhook-inbox" };
    if (channel.kind === "webhook") Object.assign(headers, await webhookHeaders(channel.key, context.messageId, Math.floor(context.nowMs / 1000), body));
    // redirect "manual": a redirect would send the alert to a URL nobody configured.
    const response = await fetch(channel.url, { method: "POST", headers, body, redirect: "manual", signal });
    await response.body?.cancel();
    return response.ok ? { ok: true } : { ok: false, error: `the channel answered ${response.status}` };
  } catch (error) {
    if (signal.aborted) return { ok: false, error: `no answer within ${context.timeoutMs / 1000} s` };
    // A fetch error's message can hold the URL: say what kind of failure it was, not more.
    return { ok: false, error: `the request failed (${error instanceof Error ? error.name : "error"})` };
  }
}

function withSignal<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    promise.then(resolve, reject);
  });
}
