/** The rotation marks in D1 (migrations/0010): when a source's previous secret last verified a delivery. */
import { isoTime } from "../clock";

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
