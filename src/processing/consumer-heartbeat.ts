/**
 * The consumer's heartbeat: a queue batch notes, at most once a minute per isolate, that the
 * consumer runs. Alerting opens an incident when deliveries wait and no batch came for
 * ALERT_HEARTBEAT_SECONDS (alerts/rules.ts `heartbeats`). One row written a minute, never per delivery.
 */
import { describeError } from "../handler-api/errors";
import { openStore } from "../store";

export const CONSUMER_HEARTBEAT_EVERY_MS = 60_000;
let notedAtMs: number | null = null;

/** Notes the heartbeat when the last note is older than CONSUMER_HEARTBEAT_EVERY_MS; never throws. */
export async function noteConsumerHeartbeat(env: Env, nowMs = Date.now()): Promise<void> {
  if (notedAtMs !== null && nowMs - notedAtMs < CONSUMER_HEARTBEAT_EVERY_MS) return;
  notedAtMs = nowMs;
  try {
    await openStore(env).alerts.noteHeartbeat("consumer", nowMs);
  } catch (error) {
    notedAtMs = null;
    console.error("could not note the consumer's heartbeat:", describeError(error));
  }
}
