/**
 * Alerting's tables in Postgres (migrations-postgres/0008; the promises are store/alerts.ts's, the
 * statements D1's, store/d1/alerts.ts). An evaluation's changes are one transaction that first
 * takes the turn (a row lock on its mark), and rolls back when another evaluation took it.
 */
import { isoTime } from "../clock";
import type { AlertCounts, AlertStore, IncidentChanges, MessageStatus } from "../alerts";
import { ALERT_STATE_MARK, ALERT_TURN_MARK, failureTotals, HEARTBEAT_MARK_PREFIX, incidentFromRow, messageFromRow, minuteKey } from "../alert-rows";
import type { Connections } from "./client";
import { ownTransaction } from "./queryable";

const INCIDENT_COLUMNS = "id, key, rule, source, subscriber, error_key, status, summary, count, since, opened_at, notified_at, last_seen_at, resolved_at";
const MESSAGE_COLUMNS = "id, incident_id, kind, channel, body, status, attempts, created_at, next_at, sent_at, last_error";
const UPSERT_MARK = "INSERT INTO inbox_marks (name, value) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET value = excluded.value";

/** Thrown inside the transaction to roll it back when the turn was taken. */
class TurnTaken extends Error {}

export function postgresAlertStore({ run }: Pick<Connections, "run">): AlertStore {
  return {
    readings: (signaturesSinceMs) =>
      run(async (q) => {
        const { rows } = await q.query<{ part: string; a: string | null; b: string | null; c: string | null; n: string | null; at: string | null }>(
          `SELECT 'group' AS part, source AS a, subscriber AS b, error_key AS c, failed_now::text AS n, since AS at FROM alert_failures WHERE failed_now > 0
           UNION ALL SELECT 'total', source, subscriber, NULL, failed_ever::text, NULL FROM alert_failure_totals
           UNION ALL SELECT 'signature', source, NULL, NULL, sum(count)::text, NULL FROM alert_signature_failures WHERE minute >= $1 GROUP BY source
           UNION ALL SELECT 'mark', name, value, NULL, NULL, NULL FROM inbox_marks WHERE name IN ($2, $3) OR name LIKE $4
           UNION ALL SELECT 'size', NULL, NULL, NULL, pg_database_size(current_database())::text, NULL`,
          [minuteKey(signaturesSinceMs), ALERT_STATE_MARK, ALERT_TURN_MARK, `${HEARTBEAT_MARK_PREFIX}%`],
        );
        const part = (name: string) => rows.filter((row) => row.part === name);
        const mark = (name: string) => part("mark").find((row) => row.a === name)?.b ?? null;
        const heartbeats: Record<string, number> = {};
        for (const row of part("mark")) if (row.a!.startsWith(HEARTBEAT_MARK_PREFIX)) heartbeats[row.a!.slice(HEARTBEAT_MARK_PREFIX.length)] = Date.parse(row.b!);
        const size = part("size")[0]?.n;
        return {
          failureGroups: part("group").map((row) => ({ source: row.a!, subscriber: row.b === "" ? null : row.b, errorKey: row.c!, failedNow: Number(row.n), sinceMs: Date.parse(row.at!) })),
          ...failureTotals(part("total").map((row) => ({ source: row.a!, subscriber: row.b!, failed_ever: Number(row.n) }))),
          signatureFailures: Object.fromEntries(part("signature").map((row) => [row.a!, Number(row.n)])),
          heartbeats,
          databaseBytes: size === undefined || size === null ? null : Number(size),
          state: mark(ALERT_STATE_MARK),
          turn: mark(ALERT_TURN_MARK) ?? "",
        };
      }),

    openIncidents: () => run(async (q) => (await q.query(`SELECT ${INCIDENT_COLUMNS} FROM incidents WHERE status = 'open' ORDER BY id`)).rows.map(incidentFromRow)),

    applyIncidents: (changes, nowMs) =>
      run(async (q) => {
        const now = isoTime(nowMs);
        try {
          await ownTransaction(q, async () => {
            // The turn's row, locked: a second evaluation waits here, then finds the turn moved on.
            await q.query("INSERT INTO inbox_marks (name, value) VALUES ($1, '') ON CONFLICT (name) DO NOTHING", [ALERT_TURN_MARK]);
            const { rows } = await q.query<{ value: string }>("SELECT value FROM inbox_marks WHERE name = $1 FOR UPDATE", [ALERT_TURN_MARK]);
            if ((rows[0]?.value ?? "") !== changes.turnBefore) throw new TurnTaken();
            await q.query(UPSERT_MARK, [ALERT_TURN_MARK, changes.turn]);
            await q.query(UPSERT_MARK, [ALERT_STATE_MARK, changes.state]);
            await applyChanges(q, changes, now);
          });
          return true;
        } catch (error) {
          if (error instanceof TurnTaken) return false;
          throw error;
        }
      }),

    claimDueMessages: (nowMs, claimUntilMs, limit) =>
      run(async (q) => {
        const { rows } = await q.query(
          `UPDATE alert_messages SET next_at = $2
            WHERE id IN (SELECT id FROM alert_messages AS due WHERE status = 'pending' AND next_at <= $1
                           AND NOT EXISTS (SELECT 1 FROM alert_messages AS older
                                            WHERE older.status = 'pending' AND older.next_at > $1 AND older.channel = due.channel AND older.id < due.id)
                         ORDER BY id LIMIT $3 FOR UPDATE SKIP LOCKED)
              AND status = 'pending' AND next_at <= $1
           RETURNING ${MESSAGE_COLUMNS}`,
          [isoTime(nowMs), isoTime(claimUntilMs), limit],
        );
        return rows.map(messageFromRow).sort((a, b) => a.id - b.id);
      }),

    releaseMessages: (ids, nowMs) =>
      ids.length === 0
        ? Promise.resolve()
        : run(async (q) => {
            await q.query("UPDATE alert_messages SET next_at = $2 WHERE id = ANY($1::bigint[]) AND status = 'pending'", [ids, isoTime(nowMs)]);
          }),

    settleMessage: (id, outcome, nowMs) =>
      run(async (q) => {
        if (outcome.sent) {
          await q.query("UPDATE alert_messages SET status = 'sent', attempts = attempts + 1, sent_at = $2, last_error = NULL WHERE id = $1", [id, isoTime(nowMs)]);
          return;
        }
        await q.query("UPDATE alert_messages SET status = $2, attempts = attempts + 1, next_at = $3, last_error = $4 WHERE id = $1", [
          id,
          outcome.nextAtMs === null ? "failed" : "pending",
          isoTime(outcome.nextAtMs ?? nowMs),
          outcome.error,
        ]);
      }),

    noteSignatureFailures: (source, count, nowMs) =>
      run(async (q) => {
        await q.query(
          "INSERT INTO alert_signature_failures AS s (source, minute, count) VALUES ($1, $2, $3) ON CONFLICT (source, minute) DO UPDATE SET count = s.count + excluded.count",
          [source, minuteKey(nowMs), count],
        );
      }),

    noteHeartbeat: (name, nowMs) =>
      run(async (q) => {
        await q.query(UPSERT_MARK, [`${HEARTBEAT_MARK_PREFIX}${name}`, isoTime(nowMs)]);
      }),

    listIncidents: (limit) =>
      run(async (q) => {
        const { rows } = await q.query(
          `SELECT ${INCIDENT_COLUMNS} FROM (
             (SELECT * FROM incidents WHERE status = 'open' ORDER BY id DESC LIMIT $1)
             UNION ALL
             (SELECT * FROM incidents WHERE status = 'resolved' ORDER BY id DESC LIMIT $1)) AS recent
           ORDER BY status = 'resolved', id DESC LIMIT $1`,
          [limit],
        );
        return rows.map(incidentFromRow);
      }),

    incident: (id) => run(async (q) => (await q.query(`SELECT ${INCIDENT_COLUMNS} FROM incidents WHERE id = $1`, [id])).rows.map(incidentFromRow)[0] ?? null),

    messagesOf: (incidentIds) =>
      incidentIds.length === 0
        ? Promise.resolve([])
        : run(async (q) => (await q.query(`SELECT ${MESSAGE_COLUMNS} FROM alert_messages WHERE incident_id = ANY($1::bigint[]) ORDER BY id`, [incidentIds])).rows.map(messageFromRow)),

    counts: () =>
      run(async (q) => {
        const { rows } = await q.query<{ part: string; a: string | null; b: string | null; n: string }>(
          `SELECT 'open' AS part, rule AS a, NULL AS b, count(*)::text AS n FROM incidents WHERE status = 'open' GROUP BY rule
           UNION ALL SELECT 'total', NULL, NULL, count(*)::text FROM incidents
           UNION ALL SELECT 'messages', channel, status, count(*)::text FROM alert_messages GROUP BY channel, status`,
        );
        return {
          openByRule: Object.fromEntries(rows.filter((row) => row.part === "open").map((row) => [row.a!, Number(row.n)])),
          incidents: Number(rows.find((row) => row.part === "total")?.n ?? 0),
          messages: rows.filter((row) => row.part === "messages").map((row) => ({ channel: row.a!, status: row.b as MessageStatus, n: Number(row.n) })),
        } satisfies AlertCounts;
      }),

    prune: (beforeMs) =>
      run(async (q) => {
        const before = isoTime(beforeMs);
        await q.query("DELETE FROM alert_messages WHERE incident_id IN (SELECT id FROM incidents WHERE status = 'resolved' AND resolved_at < $1)", [before]);
        await q.query("DELETE FROM incidents WHERE status = 'resolved' AND resolved_at < $1", [before]);
        await q.query("DELETE FROM alert_signature_failures WHERE minute < $1", [minuteKey(beforeMs)]);
        await q.query("DELETE FROM alert_failures WHERE failed_now = 0 AND last_at < $1", [before]);
      }),
  };
}

/** The incidents and messages of one evaluation, inside its transaction. */
async function applyChanges(q: Parameters<Parameters<Connections["run"]>[0]>[0], changes: IncidentChanges, now: string): Promise<void> {
  const addMessages = async (where: "key" | "id", value: string | number, status: "open" | "resolved", messages: IncidentChanges["open"][number]["messages"]) => {
    for (const message of messages) {
      await q.query(
        `INSERT INTO alert_messages (incident_id, kind, channel, body, created_at, next_at) SELECT id, $2, $3, $4, $5, $5 FROM incidents WHERE ${where} = $1 AND status = $6`,
        [value, message.kind, message.channel, message.body, now, status],
      );
    }
  };
  for (const incident of changes.open) {
    await q.query(
      `INSERT INTO incidents (key, rule, source, subscriber, error_key, status, summary, count, since, opened_at, notified_at, last_seen_at)
       VALUES ($1, $2, $3, $4, $5, 'open', $6, $7, $8, $9, $9, $9) ON CONFLICT (key) WHERE status = 'open' DO NOTHING`,
      [incident.key, incident.rule, incident.source, incident.subscriber, incident.errorKey, incident.summary, incident.count, isoTime(incident.sinceMs), now],
    );
    await addMessages("key", incident.key, "open", incident.messages);
  }
  for (const kept of changes.keep) {
    await q.query("UPDATE incidents SET count = $2, summary = $3, last_seen_at = $4 WHERE id = $1 AND status = 'open'", [kept.id, kept.count, kept.summary, now]);
  }
  for (const reminded of changes.remind) {
    await q.query("UPDATE incidents SET notified_at = $2 WHERE id = $1 AND status = 'open'", [reminded.id, now]);
    await addMessages("id", reminded.id, "open", reminded.messages);
  }
  for (const resolved of changes.resolve) {
    await q.query("UPDATE incidents SET status = 'resolved', resolved_at = $2, last_seen_at = $2 WHERE id = $1 AND status = 'open'", [resolved.id, now]);
    await addMessages("id", resolved.id, "resolved", resolved.messages);
  }
}
