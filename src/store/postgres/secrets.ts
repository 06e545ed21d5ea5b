/** The rotation marks and provider messages in Postgres (migrations-postgres/0004); the same statements as D1's (store/d1/secrets.ts). */
import { isoTime } from "../clock";
import type { ProviderMessage, ProviderMessageCount } from "../provider-messages";
import type { Queryable } from "./queryable";

export async function notePreviousSecret(q: Queryable, source: string, nowMs: number): Promise<void> {
  await q.query(
    "INSERT INTO source_secrets (source, previous_matched_at) VALUES ($1, $2) ON CONFLICT (source) DO UPDATE SET previous_matched_at = excluded.previous_matched_at",
    [source, isoTime(nowMs)],
  );
}

export async function previousSecretUses(q: Queryable): Promise<Record<string, string>> {
  const { rows } = await q.query<{ source: string; previous_matched_at: string }>("SELECT source, previous_matched_at FROM source_secrets");
  return Object.fromEntries(rows.map((row) => [row.source, row.previous_matched_at]));
}

/** Counts a provider message that is not a delivery; the same statement as D1's. */
export async function recordProviderMessage(q: Queryable, message: ProviderMessage, nowMs: number): Promise<void> {
  await q.query(
    "INSERT INTO provider_messages (source, kind, count, last_at, last_detail) VALUES ($1, $2, 1, $3, $4) " +
      "ON CONFLICT (source, kind) DO UPDATE SET count = provider_messages.count + 1, last_at = excluded.last_at, last_detail = excluded.last_detail",
    [message.source, message.kind, isoTime(nowMs), message.detail],
  );
}

export async function providerMessages(q: Queryable): Promise<ProviderMessageCount[]> {
  const { rows } = await q.query<{ source: string; kind: string; count: string | number; last_at: string; last_detail: string }>(
    "SELECT source, kind, count, last_at, last_detail FROM provider_messages ORDER BY source, kind",
  );
  return rows.map((row) => ({ source: row.source, kind: row.kind, count: Number(row.count), lastAt: row.last_at, lastDetail: row.last_detail }));
}
