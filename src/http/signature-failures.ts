/**
 * Counts the requests refused for their signature, per source, for alerting's "signature failures"
 * rule (a rotated secret not yet set here, or someone probing). After the 401 is answered, never
 * before; and a flood of bad requests must not become a flood of writes: an isolate writes at most
 * once per source every SIGNATURE_NOTE_EVERY_MS, carrying the failures counted since its last write.
 * What an isolate holds when it is evicted is lost: a count for alerting, not a ledger.
 */
import { openStore, type WaitUntil } from "../store";

export const SIGNATURE_NOTE_EVERY_MS = 1_000;

const pending = new Map<string, { count: number; lastWriteMs: number }>();

/** Counts one signature failure of `source`, written after the answer when its turn has come. */
export function noteSignatureFailure(env: Env, ctx: WaitUntil, source: string, nowMs = Date.now()): void {
  const entry = pending.get(source) ?? { count: 0, lastWriteMs: 0 };
  entry.count++;
  pending.set(source, entry);
  if (nowMs - entry.lastWriteMs < SIGNATURE_NOTE_EVERY_MS) return;
  const count = entry.count;
  entry.count = 0;
  entry.lastWriteMs = nowMs;
  ctx.waitUntil(
    openStore(env)
      .alerts.noteSignatureFailures(source, count, nowMs)
      .catch((error: unknown) => {
        // Given back, for the next write to carry.
        entry.count += count;
        console.error(`source ${source}: could not count signature failures:`, error instanceof Error ? error.message : String(error));
      }),
  );
}
