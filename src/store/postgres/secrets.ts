/** The rotation marks in Postgres (migrations-postgres/0004); the same statements as D1's (store/d1/secrets.ts). */
import { isoTime } from "../clock";
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
