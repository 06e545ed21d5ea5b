/**
 * The handshake shapes providers need, as small constructors a declaration lists: a JSON echo
 * (Slack, Event Grid), a text echo (Twitch, Graph, Dropbox), a GET with a verify token (Meta), a
 * computed reply (Zoom), a fixed answer (Discord's PING) and an outbound confirmation (SNS).
 */
import { hmac, jsonString, timingSafeEqualText, toHex } from "../crypto";
import type { AcceptReply, FollowUp, HandshakeReply } from "../types";
import type { Handshake, HandshakeInput } from "./declaration";

function query(input: HandshakeInput, name: string): string | null {
  return URL.canParse(input.request.url) ? new URL(input.request.url).searchParams.get(name) : null;
}

/** Text echoed as sent: `text/plain`, `nosniff`, so a browser never renders attacker text as HTML. */
export function textReply(name: string, body: string): HandshakeReply {
  return { name, status: 200, contentType: "text/plain; charset=utf-8", body, headers: { "X-Content-Type-Options": "nosniff" } };
}

export function jsonReply(name: string, value: unknown, status = 200): HandshakeReply {
  return { name, status, contentType: "application/json", body: JSON.stringify(value) };
}

/** Meta's GET: `hub.mode=subscribe`, `hub.verify_token` equal to the `VERIFY_TOKEN` setting, `hub.challenge` echoed. */
export const verifyTokenGet: Handshake = (input) => {
  if ((input.request.method ?? "POST") !== "GET" || query(input, "hub.mode") !== "subscribe") return null;
  const expected = input.context.setting("VERIFY_TOKEN");
  const token = query(input, "hub.verify_token") ?? "";
  const challenge = query(input, "hub.challenge");
  // A wrong token is answered 403 as Meta's docs do; without a configured token nothing subscribes.
  if (!expected || !timingSafeEqualText(token, expected) || challenge === null) return { name: "hub.verify_token", status: 403, contentType: "text/plain; charset=utf-8", body: "verify token mismatch" };
  return textReply("hub.challenge", challenge);
};

/** A text echo of a query parameter on the given method (Dropbox's GET `challenge`, Graph's POST `validationToken`). */
export function queryEcho(parameter: string, method: "GET" | "POST"): Handshake {
  return (input) => {
    if ((input.request.method ?? "POST") !== method) return null;
    const value = query(input, parameter);
    return value === null ? null : textReply(parameter, value);
  };
}

/** Twitch's `webhook_callback_verification`: the body's `challenge`, as text. */
export const twitchChallenge: Handshake = (input) => {
  if (input.request.headers.get("twitch-eventsub-message-type") !== "webhook_callback_verification") return null;
  const challenge = jsonString(input.parsed, "challenge");
  return challenge === null ? null : textReply("webhook_callback_verification", challenge);
};

/** Zoom's `endpoint.url_validation`: `plainToken` and its hex HMAC-SHA256 under the secret that verified. */
export const zoomUrlValidation: Handshake = async (input) => {
  if (jsonString(input.parsed, "event") !== "endpoint.url_validation") return null;
  const plainToken = jsonString(input.parsed, "payload.plainToken");
  if (plainToken === null) return null;
  const encryptedToken = toHex(await hmac("SHA-256", input.secrets[input.matchedSecret]!, plainToken));
  return jsonReply("endpoint.url_validation", { plainToken, encryptedToken });
};

/** Event Grid's `SubscriptionValidationEvent`: `{validationResponse: <validationCode>}`. */
export const eventGridValidation: Handshake = (input) => {
  const first = Array.isArray(input.parsed) ? input.parsed[0] : null;
  if (jsonString(first, "eventType") !== "Microsoft.EventGrid.SubscriptionValidationEvent") return null;
  const code = jsonString(first, "data.validationCode");
  return code === null ? null : jsonReply("SubscriptionValidationEvent", { validationResponse: code });
};

/**
 * Discord sends two things to one kind of URL: Interactions (an `id`, a `token`, a `type`: 1 PING,
 * 2 APPLICATION_COMMAND, 3 MESSAGE_COMPONENT, 4 APPLICATION_COMMAND_AUTOCOMPLETE, 5 MODAL_SUBMIT)
 * and Webhook Events (`type` 0 PING, or 1 with its `event`). An interaction is one when it carries
 * its token and no `event`.
 */
function discordInteractionType(parsed: unknown): number | null {
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed) || "event" in parsed) return null;
  const { type, token } = parsed as { type?: unknown; token?: unknown };
  return typeof token === "string" && typeof type === "number" && Number.isInteger(type) ? type : null;
}

/** Discord's interaction types by number, as the event type of a stored interaction. */
const DISCORD_INTERACTIONS: Readonly<Record<number, string>> = {
  2: "APPLICATION_COMMAND",
  3: "MESSAGE_COMPONENT",
  4: "APPLICATION_COMMAND_AUTOCOMPLETE",
  5: "MODAL_SUBMIT",
};

/**
 * Discord's PING: an interaction of type 1 is answered `{"type":1}`; a Webhook Events PING (type 0)
 * 204. A webhook event is type 1 too, but carries its `event`.
 */
export const discordPing: Handshake = (input) => {
  const type = jsonString(input.parsed, "type");
  const isEvent = input.parsed !== null && typeof input.parsed === "object" && "event" in input.parsed;
  if (type === "1" && !isEvent) return jsonReply("PING", { type: 1 });
  if (type === "0") return { name: "PING", status: 204, body: "" };
  return null;
};

/** A stored Discord delivery's event type: a webhook event's `event.type`, else the interaction's kind. */
export function discordEventType(parsed: unknown): string | null {
  const interaction = discordInteractionType(parsed);
  if (interaction !== null) return DISCORD_INTERACTIONS[interaction] ?? `INTERACTION_${interaction}`;
  return jsonString(parsed, "event.type");
}

/**
 * The answer to a stored (or duplicate) Discord delivery. Discord wants an interaction response
 * within 3 s, and the inbox processes later, so it defers: a command or a modal submit gets
 * `{"type":5}` (DEFERRED_CHANNEL_MESSAGE_WITH_SOURCE: the user sees "thinking…"), a component
 * `{"type":6}` (DEFERRED_UPDATE_MESSAGE, only valid for components), and the handler follows up
 * with the interaction's token (valid 15 minutes). Autocomplete cannot be deferred: it gets no
 * choices (`{"type":8,"data":{"choices":[]}}`). A webhook event, and an interaction type Discord
 * adds later, get 204 as before.
 */
export function discordAccept(input: HandshakeInput): AcceptReply {
  const type = discordInteractionType(input.parsed);
  const json = (value: unknown): AcceptReply => ({ status: 200, contentType: "application/json", body: JSON.stringify(value) });
  if (type === 2 || type === 5) return json({ type: 5 });
  if (type === 3) return json({ type: 6 });
  if (type === 4) return json({ type: 8, data: { choices: [] } });
  return { status: 204, body: "" };
}

/** SNS's `SubscriptionConfirmation`: the receiver GETs `SubscribeURL` (allow-listed) before answering. */
export function snsConfirmation(allowedHosts: readonly RegExp[]): Handshake {
  return (input) => {
    if (jsonString(input.parsed, "Type") !== "SubscriptionConfirmation") return null;
    const url = jsonString(input.parsed, "SubscribeURL");
    if (url === null) return null;
    const followUp: FollowUp = { kind: "confirm-subscription", url, allowedHosts };
    return { ...jsonReply("SubscriptionConfirmation", { status: "subscription_confirmed" }), followUp };
  };
}
