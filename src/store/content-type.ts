/**
 * The Content-Type a provider sent with a delivery, for forwarding (src/forwarding/): read from
 * the request headers stored with the row (migrations/0008, headers.ts), in SQL, so that only the
 * one value travels, not the whole header list.
 */
import type { DeliveryRef } from "../processing/messages";

/**
 * The stored `content-type` header of a delivery; null when none was stored (a row of before
 * migrations/0008, headers cleared by retention, or a request without one).
 */
export async function readContentType(db: D1Database, ref: DeliveryRef): Promise<string | null> {
  const row = await db
    .prepare(
      `SELECT (SELECT json_extract(header.value, '$[1]') FROM json_each(CASE WHEN json_valid(headers) THEN headers END) AS header
                WHERE json_extract(header.value, '$[0]') = 'content-type' LIMIT 1) AS content_type
         FROM deliveries WHERE source = ?1 AND id = ?2`,
    )
    .bind(ref.source, ref.id)
    .first<{ content_type: unknown }>();
  return typeof row?.content_type === "string" && row.content_type !== "" ? row.content_type : null;
}
