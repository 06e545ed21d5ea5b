/** The rotation marks and provider messages in D1 (migrations/0010): when a source's previous secret last verified a delivery; lifecycle messages counted apart. */
import { isoTime } from "../clock";
import type { ProviderMessage, ProviderMessageCount } from "../provider-messages";

export async function notePreviousSecret(db: D1Database, source: string, nowMs: number): Promise<void> {
  await db
    .prepare("INSERT INTO source_secrets (source, previous_matched_at) VALUES (?1, ?2) ON CONFLICT (source) DO UPDATE SET previous_matched_at = excluded.previous_matched_at")
    .bind(source, isoTime(nowMs))
    .run();
}

export async function previousSecretUses(db: D1Database): Promise<Record<string, string>> {
  const { results } = await db.prepare("SELECT source, previous_matched_at FROM source_secrets").all<{ source: string; previous_matched_at: string }>();
  return Object.fromEntries(results.map((row) => [row.source, row.previous_matched_at]));
}

/** Counts a provider message that is not a delivery (a lifecycle message, a confirmed subscription). */
export async function recordProviderMessage(db: D1Database, message: ProviderMessage, nowMs: number): Promise<void> {
  await db
    .prepare(
      "INSERT INTO provider_messages (source, kind, count, last_at, last_detail) VALUES (?1, ?2, 1, ?3, ?4) " +
        "ON CONFLICT (source, kind) DO UPDATE SET count = count + 1, last_at = excluded.last_at, last_detail = excluded.last_detail",
    )
    .bind(message.source, message.kind, isoTime(nowMs), message.detail)
    .run();
}

export async function providerMessages(db: D1Database): Promise<ProviderMessageCount[]> {
  const { results } = await db
    .prepare("SELECT source, kind, count, last_at, last_detail FROM provider_messages ORDER BY source, kind")
    .all<{ source: string; kind: string; count: number; last_at: string; last_detail: string }>();
  return results.map((row) => ({ source: row.source, kind: row.kind, count: row.count, lastAt: row.last_at, lastDetail: row.last_detail }));
}
