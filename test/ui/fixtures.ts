/** Deliveries in any state, written straight to D1, for the dashboard's pages to show. */
import { env } from "cloudflare:workers";
import type { AttemptEntry } from "../../src/store/attempt-log";
import { insertDelivery } from "../../src/store/record";

export interface Fixture {
  source: string;
  id: string;
  eventType?: string | null;
  /** A string is sent as UTF-8; null stores a row whose body retention cleared. */
  body?: string | Uint8Array | null;
  headers?: readonly (readonly [string, string])[] | null;
  status?: "received" | "processing" | "done" | "failed";
  attempts?: number;
  error?: string | null;
  handled?: boolean | null;
  attemptLog?: readonly AttemptEntry[];
  receivedAtMs?: number;
}

export async function putDelivery(fixture: Fixture): Promise<void> {
  const body = fixture.body === undefined ? "{}" : fixture.body;
  const bytes = body === null ? new Uint8Array() : typeof body === "string" ? new TextEncoder().encode(body) : body;
  await insertDelivery(env.DB, {
    source: fixture.source,
    id: fixture.id,
    eventType: fixture.eventType === undefined ? "test.event" : fixture.eventType,
    body: bytes,
    receivedAtMs: fixture.receivedAtMs ?? Date.now(),
    headers: fixture.headers === undefined ? JSON.stringify([["content-type", "application/json"]]) : fixture.headers === null ? null : JSON.stringify(fixture.headers),
  }).run();
  const handled = fixture.handled ?? (fixture.status === "done" ? true : null);
  await env.DB.prepare(
    `UPDATE deliveries SET status = ?3, attempts = ?4, error = ?5, handled = ?6, attempt_log = ?7, body = CASE WHEN ?8 THEN NULL ELSE body END
      WHERE source = ?1 AND id = ?2`,
  )
    .bind(
      fixture.source,
      fixture.id,
      fixture.status ?? "received",
      fixture.attempts ?? 0,
      fixture.error ?? null,
      handled === null ? null : handled ? 1 : 0,
      fixture.attemptLog ? JSON.stringify(fixture.attemptLog) : null,
      body === null ? 1 : 0,
    )
    .run();
}
