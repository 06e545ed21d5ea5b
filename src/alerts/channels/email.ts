/**
 * Email through Cloudflare's `send_email` binding, configured only where the user adds one named
 * ALERT_EMAIL (`[[send_email]] name = "ALERT_EMAIL"`) and sets ALERT_EMAIL_FROM and ALERT_EMAIL_TO:
 * a plain-text message, composed with the binding's message builder (no MIME by hand). Under
 * `wrangler dev` the binding is simulated: the message is logged, not sent.
 */
import { messageText, messageTitle, type AlertMessage } from "../message";

export function emailMessage(message: AlertMessage, from: string, to: string): EmailMessageBuilder {
  return { from, to, subject: `[webhook-inbox] ${messageTitle(message)}`.slice(0, 200), text: messageText(message) };
}

/** The ALERT_EMAIL binding of `env`, when it is one. */
export function emailBinding(env: object): SendEmail | null {
  const binding = (env as Record<string, unknown>).ALERT_EMAIL;
  return typeof binding === "object" && binding !== null && typeof (binding as { send?: unknown }).send === "function" ? (binding as SendEmail) : null;
}
