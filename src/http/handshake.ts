/**
 * The receiver's answers that are not "stored": a handshake's exact reply (status, content type,
 * body, headers), after its follow-up ran (SNS's SubscribeURL, fetched only from an allow-listed
 * host), and a provider's lifecycle message, which is logged and answered but never stored as a
 * delivery nor run through a handler.
 */
import type { Context } from "hono";
import { fetchAllowed, isAllowedUrl } from "../providers/engine/outbound";
import type { HandshakeReply } from "../providers/types";
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
    // Logged so that the confirmation shows in `wrangler tail` and Workers Logs (never the URL's token).
    console.log(`source ${source}: ${reply.name} confirmed at ${new URL(url).host}`);
  }
  const headers: Record<string, string> = { ...(reply.headers ?? {}) };
  if (reply.contentType) headers["Content-Type"] = reply.contentType;
  return new Response(reply.status === 204 ? null : reply.body, { status: reply.status, headers });
}

/** A lifecycle message: logged and answered 200; no delivery, no handler. */
export function answerLifecycle(c: Context<AppEnv>, source: string, lifecycle: { kind: string; detail: string }): Response {
  console.log(`source ${source}: lifecycle ${lifecycle.kind}: ${lifecycle.detail}`);
  return c.json({ status: "lifecycle", source, kind: lifecycle.kind });
}
