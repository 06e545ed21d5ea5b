/** Deliveries in any state, stored through the store and then set by hand, for the dashboard's pages to show. */
import { sql } from "../../../src/sql";
import type { AttemptEntry } from "../../../src/store/attempts";
import { exec, recordDelivery } from "../../helpers/store-db";

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
  await recordDelivery({
    source: fixture.source,
    id: fixture.id,
    eventType: fixture.eventType === undefined ? "test.event" : fixture.eventType,
    body: bytes,
    receivedAtMs: fixture.receivedAtMs ?? Date.now(),
    headers: fixture.headers === undefined ? JSON.stringify([["content-type", "application/json"]]) : fixture.headers === null ? null : JSON.stringify(fixture.headers),
  });
  const handled = fixture.handled ?? (fixture.status === "done" ? true : null);
  const attemptLog = fixture.attemptLog ? JSON.stringify(fixture.attemptLog) : null;
  await exec(
    sql`UPDATE deliveries SET status = ${fixture.status ?? "received"}, attempts = ${fixture.attempts ?? 0}, error = ${fixture.error ?? null},
          handled = ${handled}, attempt_log = ${attemptLog}, body = CASE WHEN ${body === null} THEN NULL ELSE body END
        WHERE source = ${fixture.source} AND id = ${fixture.id}`,
  );
}
