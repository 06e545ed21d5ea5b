/**
 * The alert beat: run by every sweep (processing/sweeper.ts), after the overview's snapshot is
 * maintained. The thin layer over the pure parts:
 * 1. at most once per ALERT_INTERVAL_SECONDS (the state's `lastEvaluatedMs`), it reads the snapshot
 *    and the counters (never the deliveries table), evaluates the rules (rules.ts), plans the
 *    incidents (incidents.ts) and applies the plan with its messages, one per channel, in one
 *    transaction (store/alerts.ts);
 * 2. every beat, it sends the outbox's due messages, each bounded by ALERT_SEND_TIMEOUT_SECONDS,
 *    a failure tried again later (outbox.ts).
 * The receiver never waits for any of it. Nothing here throws: a failure is logged, and the next
 * beat tries again.
 */
import { describeChannel, type AlertChannel } from "../config/alerts";
import type { InboxConfig } from "../config";
import { describeError } from "../handler-api/errors";
import { isoTime } from "../store/clock";
import type { IncidentChanges, IncidentRecord, NewMessage, OutboxMessage, Store } from "../store";
import { destinationStates, type DestinationState } from "./breaker";
import { channelName, sendAlert } from "./channels";
import { planIncidents, type MessageKind } from "./incidents";
import { absolute, incidentPath, listPath } from "./links";
import type { AlertMessage } from "./message";
import { CLAIM_MS, nextTryMs } from "./outbox";
import type { Condition, RuleName } from "./condition";
import { evaluateRules } from "./rules";
import { evaluationDue, parseState, sourceSamples, withSample } from "./state";
import { DELIVERY_STATUSES } from "../store/deliveries";

/** New incidents per evaluation at most: the rest open a minute later (D1 caps statements per invocation). */
export const MAX_OPENED_PER_EVALUATION = 50;
/** Messages sent per beat at most. */
export const MAX_SENT_PER_BEAT = 25;
/** Resolved incidents, idle failure groups and signature minutes are kept this long. */
export const ALERT_HISTORY_MS = 30 * 86_400_000;
const PRUNE_EVERY_MS = 3_600_000;

/** The beat at `nowMs`: evaluate when due, then send what is due. Never throws. */
export async function alertBeat(env: Env, store: Store, config: InboxConfig, nowMs: number): Promise<void> {
  try {
    await evaluate(store, config, nowMs, (sources) => destinationStates(env, sources));
  } catch (error) {
    console.error("alerts: evaluation failed; the next beat tries again:", describeError(error));
  }
  try {
    await sendDue(env, store, config, nowMs);
  } catch (error) {
    console.error("alerts: sending failed; the next beat tries again:", describeError(error));
  }
}

/** Evaluates the rules at `nowMs` when an evaluation is due, and applies what changed. */
export async function evaluate(
  store: Store,
  config: InboxConfig,
  nowMs: number,
  readDestinations: (sources: readonly string[]) => Promise<readonly DestinationState[]> = async () => [],
): Promise<boolean> {
  const { rules } = config.alerts;
  const readings = await store.alerts.readings(nowMs - rules.signatureWindowMinutes * 60_000);
  const state = parseState(readings.state);
  if (!evaluationDue(state, nowMs, config.alerts.intervalSeconds * 1000)) return false;
  const overview = await store.overview(nowMs);
  const received = Object.fromEntries(Object.entries(overview.bySource).map(([source, counts]) => [source, DELIVERY_STATUSES.reduce((sum, status) => sum + counts[status], 0)]));
  const samples = withSample(state.samples, { atMs: nowMs, bySource: sourceSamples(received, readings.failedEver, readings.failedEverBySubscriber) }, rules.failureRateWindowMinutes * 60_000);
  const conditions = evaluateRules(
    {
      nowMs,
      failureGroups: readings.failureGroups,
      samples,
      signatureFailures: readings.signatureFailures,
      oldestWaitingSeconds: overview.oldestWaitingSeconds,
      waiting: overview.counts.received + overview.counts.processing,
      heartbeats: readings.heartbeats,
      destinations: await readDestinations(Object.keys(overview.bySource)),
      databaseBytes: readings.databaseBytes,
    },
    rules,
  );
  const open = await store.alerts.openIncidents();
  const plan = planIncidents(
    conditions,
    open.map((incident) => ({ id: incident.id, key: incident.key, openedAtMs: Date.parse(incident.openedAt), notifiedAtMs: Date.parse(incident.notifiedAt), count: incident.count })),
    nowMs,
    config.alerts.reminderHours * 3_600_000,
  );
  const byId = new Map(open.map((incident) => [incident.id, incident]));
  const prune = state.lastPrunedMs === null || nowMs - state.lastPrunedMs >= PRUNE_EVERY_MS;
  const messagesFor = (kind: MessageKind, about: MessageSubject) => config.alerts.channels.map((channel) => newMessage(channel, kind, about, config, nowMs));
  const changes: IncidentChanges = {
    turnBefore: readings.turn,
    turn: `${nowMs}:${crypto.randomUUID()}`,
    state: JSON.stringify({ lastEvaluatedMs: nowMs, lastPrunedMs: prune ? nowMs : state.lastPrunedMs, samples }),
    open: plan.open.slice(0, MAX_OPENED_PER_EVALUATION).map((condition) => ({
      key: condition.key,
      rule: condition.rule,
      source: condition.source,
      subscriber: condition.subscriber,
      errorKey: condition.errorKey,
      summary: condition.summary,
      count: condition.count,
      sinceMs: condition.sinceMs ?? nowMs,
      messages: messagesFor("opened", { ...condition, since: isoTime(condition.sinceMs ?? nowMs), resolvedAt: null }),
    })),
    // Only what changed is written.
    keep: plan.keep.filter((kept) => byId.get(kept.id)?.count !== kept.count || byId.get(kept.id)?.summary !== kept.summary),
    remind: plan.remind.map((id) => ({ id, messages: messagesFor("reminder", subjectOf(byId.get(id)!, plan.keep.find((kept) => kept.id === id), null)) })),
    resolve: plan.resolve.map((id) => ({ id, messages: messagesFor("resolved", subjectOf(byId.get(id)!, undefined, isoTime(nowMs))) })),
  };
  const applied = await store.alerts.applyIncidents(changes, nowMs);
  if (applied && prune) await store.alerts.prune(nowMs - ALERT_HISTORY_MS);
  for (const opened of changes.open) console.log(`alerts: incident opened: ${opened.summary}`);
  for (const { id } of changes.resolve) console.log(`alerts: incident ${id} resolved`);
  return applied;
}

/** What a message is about: the condition, or the incident as it stands. */
type MessageSubject = Pick<Condition, "rule" | "source" | "subscriber" | "summary" | "count"> & { readonly since: string; readonly resolvedAt: string | null };

function subjectOf(incident: IncidentRecord, now: { count: number; summary: string } | undefined, resolvedAt: string | null): MessageSubject {
  return {
    rule: incident.rule as RuleName,
    source: incident.source,
    subscriber: incident.subscriber,
    summary: now?.summary ?? incident.summary,
    count: now?.count ?? incident.count,
    since: incident.since,
    resolvedAt,
  };
}

/** The outbox row of one message for one channel (its incident's id is filled in when it is sent). */
function newMessage(channel: AlertChannel, kind: MessageKind, about: MessageSubject, config: InboxConfig, nowMs: number): NewMessage {
  const body: Omit<AlertMessage, "incidentId" | "incidentLink"> = {
    kind,
    rule: about.rule,
    source: about.source,
    subscriber: about.subscriber,
    summary: about.summary,
    count: about.count,
    since: about.since,
    resolvedAt: kind === "resolved" ? (about.resolvedAt ?? isoTime(nowMs)) : null,
    link: absolute(config.publicBaseUrl, listPath(about.rule, about.source, about.subscriber)),
  };
  return { kind, channel: channelName(channel), body: JSON.stringify(body) };
}

/**
 * Sends the due messages: each channel's in order, the channels at once. A failure waits for its
 * retry, and the channel's later messages wait behind it.
 */
export async function sendDue(env: object, store: Store, config: InboxConfig, nowMs: number): Promise<number> {
  const due = await store.alerts.claimDueMessages(nowMs, nowMs + CLAIM_MS, MAX_SENT_PER_BEAT);
  if (due.length === 0) return 0;
  const byChannel = new Map<string, OutboxMessage[]>();
  for (const message of due) byChannel.set(message.channel, [...(byChannel.get(message.channel) ?? []), message]);
  let sent = 0;
  await Promise.all(
    [...byChannel].map(async ([name, messages]) => {
      const channel = config.alerts.channels.find((each) => channelName(each) === name);
      for (const [index, message] of messages.entries()) {
        if (!channel) {
          await store.alerts.settleMessage(message.id, { sent: false, error: "the channel is no longer configured", nextAtMs: null }, nowMs);
          continue;
        }
        const alert: AlertMessage = {
          ...(JSON.parse(message.body) as Omit<AlertMessage, "incidentId" | "incidentLink">),
          incidentId: message.incidentId,
          incidentLink: absolute(config.publicBaseUrl, incidentPath(message.incidentId)),
        };
        const result = await sendAlert(channel, alert, { env, messageId: message.id, nowMs: Date.now(), timeoutMs: config.alerts.sendTimeoutSeconds * 1000 });
        if (result.ok) {
          sent++;
          await store.alerts.settleMessage(message.id, { sent: true }, Date.now());
          continue;
        }
        const attempts = message.attempts + 1;
        const nextAtMs = nextTryMs(attempts, Date.parse(message.createdAt), nowMs);
        console.error(`alerts: ${describeChannel(channel)} did not take message ${message.id} (try ${attempts}): ${result.error}${nextAtMs === null ? "; given up" : ""}`);
        await store.alerts.settleMessage(message.id, { sent: false, error: result.error, nextAtMs }, nowMs);
        // The channel's later messages are not tried now: released, they go after this one, in order (claimDueMessages).
        await store.alerts.releaseMessages(messages.slice(index + 1).map((each) => each.id), nowMs);
        break;
      }
    }),
  );
  return sent;
}

