/**
 * `webhook-inbox show <source> <id>`: one delivery, its fields, its subscribers' runs when it was
 * fanned out to several, its attempt history, request headers and body.
 */
import { bodyText, table } from "./format.mjs";

/**
 * @param {import("./admin-client.mjs").AdminClient} client @param {string} path the delivery's admin path
 * @param {((json: unknown) => void) | null} print @param {(line: string) => void} out
 */
export async function show(client, path, print, out) {
  const delivery = await client.get(path);
  if (print) return print(delivery);
  const handled = delivery.handled === null ? (delivery.status === "failed" ? "no (its handler failed)" : "not yet") : delivery.handled ? "yes" : "no (no handler matched)";
  const duplicates = delivery.duplicates > 0 ? `${delivery.duplicates} (the last at ${delivery.lastDuplicateAt})` : "none";
  out(
    table(
      ["FIELD", "VALUE"],
      [
        ["delivery", `${delivery.source}/${delivery.id}`],
        ["subscriber", delivery.fanout === null ? delivery.subscriber : `fanned out to ${delivery.fanout} (below)`],
        ["event type", delivery.eventType],
        ["status", delivery.status],
        ["attempts", delivery.attempts],
        ["handled", handled],
        ["duplicates", duplicates],
        ["error", delivery.error],
        ["received", delivery.receivedAt],
        ["updated", delivery.updatedAt],
        ["body", delivery.body === null ? null : `${delivery.body.bytes} bytes`],
      ],
      { maxWidth: 1_000 },
    ),
  );
  if (delivery.runs?.length > 0) {
    out("");
    /** @type {{ subscriber: string, status: string, attempts: number, error: string | null, updatedAt: string }[]} */
    const runs = delivery.runs;
    out(table(["SUBSCRIBER", "STATUS", "ATTEMPTS", "UPDATED", "ERROR"], runs.map((run) => [run.subscriber, run.status, run.attempts, run.updatedAt, run.error]), { maxWidth: 200 }));
  }
  if (delivery.attemptLog?.length > 0) {
    out("");
    /** @type {{ attempt: number | null, at: string | null, ms: number | null, outcome: string, error: string | null, count?: number }[]} */
    const log = delivery.attemptLog;
    // A repeated deferral is one entry with a count (its start and time the latest's): "deferred ×12".
    const outcome = (/** @type {typeof log[number]} */ entry) => (entry.count === undefined ? entry.outcome : `${entry.outcome} ×${entry.count}`);
    // A replay starts the count again at 1: the runs after one say which round they belong to.
    let replays = 0;
    const attempt = (/** @type {typeof log[number]} */ entry) =>
      entry.outcome === "replayed" ? `replay ${++replays}` : entry.attempt === null ? null : replays === 0 ? entry.attempt : `${entry.attempt} after replay ${replays}`;
    out(table(["ATTEMPT", "STARTED", "TOOK", "OUTCOME", "ERROR"], log.map((entry) => [attempt(entry), entry.at, entry.ms === null ? null : `${entry.ms} ms`, outcome(entry), entry.error]), { maxWidth: 200 }));
  }
  if (delivery.headers) {
    out("");
    /** @type {[string, string][]} */
    const headers = delivery.headers;
    out(headers.map(([name, value]) => `${name}: ${value}`).join("\n"));
  }
  out("");
  out(bodyText(delivery.body));
}
