/**
 * The receiver's answers that are not "stored": a handshake's exact reply (status, content type,
 * body, headers), after its follow-up ran (SNS's SubscribeURL, fetched only from an allow-listed
 * host, then counted as a provider message so that a user sees it happened), and a provider's
 * lifecycle message, which is counted apart (`provider_messages`, shown by `GET /admin/sources`),
 * logged and answered, but never stored as a delivery nor run through a handler.
 */
import type { Context } from "hono";
import { fetchAllowed, isAllowedUrl } from "../providers/engine/outbound";
import type { HandshakeReply } from "../providers/types";
import { openStore, type ProviderMessage } from "../store";
import { ApiError } from "./errors";
import type { AppEnv } from "./types";

/** Runs a handshake's follow-up and answers as the handshake says; a failed follow-up is 502, so the provider sends it again. */
export async function answerHandshake(c: Context<AppEnv>, source: string, reply: HandshakeReply, testHosts: readonly string[]): Promise<Response> {
  if (reply.followUp) {
    const { url, allowedHosts } = reply.followUp;
    if (!isAllowedUrl(url, allowedHosts, testHosts)) throw new ApiError(400, "handshake_refused", "the confirmation URL is not on the allow-list");
    const response = await fetchAllowed(url).catch(() => null);
    if (!response?.ok) {
      console.error(`source ${source}: ${reply.name} follow-up failed (${response ? response.status : "unreachable"})`);
      throw new ApiError(502, "confirmation_failed", "the subscription could not be confirmed; send it again");
    }
    // Logged and counted so that the confirmation shows (never the URL's token: only its host).
    const detail = `confirmed at ${new URL(url).host}`;
    console.log(`source ${source}: ${reply.name} ${detail}`);
    await recordMessage(c, { source, kind: reply.name, detail });
  }
  const headers: Record<string, string> = { ...(reply.headers ?? {}) };
  if (reply.contentType) headers["Content-Type"] = reply.contentType;
  return new Response(reply.status === 204 ? null : reply.body, { status: reply.status, headers });
}

/** Longest detail kept of a provider message (signed text, but text a provider chose). */
const MAX_DETAIL = 500;

/** Counts a provider message; a store failure is 503, so the provider sends it again. */
async function recordMessage(c: Context<AppEnv>, message: ProviderMessage): Promise<void> {
  try {
    await openStore(c.env).recordProviderMessage({ ...message, detail: message.detail.slice(0, MAX_DETAIL) }, Date.now());
  } catch (error) {
    console.error(`store failed for ${message.source}:`, error instanceof Error ? error.message : String(error));
    throw new ApiError(503, "store_unavailable", "the message could not be recorded; retry later");
  }
}

/** A lifecycle message: counted apart, logged and answered 200; no delivery, no handler. */
export async function answerLifecycle(c: Context<AppEnv>, source: string, lifecycle: { kind: string; detail: string }): Promise<Response> {
  await recordMessage(c, { source, kind: lifecycle.kind, detail: lifecycle.detail });
  console.log(`source ${source}: lifecycle ${lifecycle.kind}`);
  return c.json({ status: "lifecycle", source, kind: lifecycle.kind });
}
