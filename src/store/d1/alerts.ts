/**
 * Alerting's tables in D1 (migrations/0015; the promises are store/alerts.ts's). Every read is of a
 * small table or a mark; an evaluation's changes are one batch (one transaction), each statement
 * guarded by the evaluation's turn, which the batch's first statement takes.
 */
import { isoTime } from "../clock";
import type { AlertCounts, AlertReadings, AlertStore, IncidentChanges, MessageStatus } from "../alerts";
import { ALERT_STATE_MARK, ALERT_TURN_MARK, failureTotals, HEARTBEAT_MARK_PREFIX, incidentFromRow, messageFromRow, minuteKey, type IncidentRow, type MessageRow } from "../alert-rows";

const TURN = `coalesce((SELECT value FROM inbox_marks WHERE name = '${ALERT_TURN_MARK}'), '')`;
const INCIDENT_COLUMNS = "id, key, rule, source, subscriber, error_key, status, summary, count, since, opened_at, notified_at, last_seen_at, resolved_at";
const MESSAGE_COLUMNS = "id, incident_id, kind, channel, body, status, attempts, created_at, next_at, sent_at, last_error";

export function d1AlertStore(db: D1Database): AlertStore {
  return {
    async readings(signaturesSinceMs) {
      const [groups, totals, signatures, marks, size] = await db.batch([
        db.prepare("SELECT source, subscriber, error_key, failed_now, since FROM alert_failures WHERE failed_now > 0"),
        db.prepare("SELECT source, subscriber, failed_ever FROM alert_failure_totals"),
        db.prepare("SELECT source, SUM(count) AS n FROM alert_signature_failures WHERE minute >= ?1 GROUP BY source").bind(minuteKey(signaturesSinceMs)),
        db.prepare(`SELECT name, value FROM inbox_marks WHERE name IN ('${ALERT_STATE_MARK}', '${ALERT_TURN_MARK}') OR name LIKE '${HEARTBEAT_MARK_PREFIX}%'`),
        db.prepare("SELECT 1"),
      ]);
      const rows = <T>(result: D1Result | undefined) => (result?.results ?? []) as T[];
      const markRows = rows<{ name: string; value: string }>(marks);
      const mark = (name: string) => markRows.find((row) => row.name === name)?.value ?? null;
      const heartbeats: Record<string, number> = {};
      for (const row of markRows) if (row.name.startsWith(HEARTBEAT_MARK_PREFIX)) heartbeats[row.name.slice(HEARTBEAT_MARK_PREFIX.length)] = Date.parse(row.value);
      return {
        failureGroups: rows<{ source: string; subscriber: string; error_key: string; failed_now: number; since: string }>(groups).map((row) => ({
          source: row.source,
          subscriber: row.subscriber === "" ? null : row.subscriber,
          errorKey: row.error_key,
          failedNow: row.failed_now,
          sinceMs: Date.parse(row.since),
        })),
        ...failureTotals(rows<{ source: string; subscriber: string; failed_ever: number }>(totals)),
        signatureFailures: Object.fromEntries(rows<{ source: string; n: number }>(signatures).map((row) => [row.source, row.n])),
        heartbeats,
        // D1 reports the database's size with every result.
        databaseBytes: typeof size?.meta?.size_after === "number" ? size.meta.size_after : null,
        state: mark(ALERT_STATE_MARK),
        turn: mark(ALERT_TURN_MARK) ?? "",
      } satisfies AlertReadings;
    },

    async openIncidents() {
      const { results } = await db.prepare(`SELECT ${INCIDENT_COLUMNS} FROM incidents WHERE status = 'open' ORDER BY id`).all<IncidentRow>();
      return results.map(incidentFromRow);
    },

    async applyIncidents(changes, nowMs) {
      const now = isoTime(nowMs);
      const guard = `${TURN} = ?1`;
      const statements: D1PreparedStatement[] = [
        // The turn: taken only while it is still the one the evaluation read.
        db
          .prepare(`INSERT INTO inbox_marks (name, value) SELECT '${ALERT_TURN_MARK}', ?1 WHERE ${TURN} = ?2 ON CONFLICT (name) DO UPDATE SET value = excluded.value`)
          .bind(changes.turn, changes.turnBefore),
        db
          .prepare(`INSERT INTO inbox_marks (name, value) SELECT '${ALERT_STATE_MARK}', ?2 WHERE ${guard} ON CONFLICT (name) DO UPDATE SET value = excluded.value`)
          .bind(changes.turn, changes.state),
      ];
      const addMessages = (where: string, value: string | number, messages: IncidentChanges["open"][number]["messages"]) => {
        for (const message of messages) {
          statements.push(
            db
              .prepare(`INSERT INTO alert_messages (incident_id, kind, channel, body, created_at, next_at) SELECT id, ?3, ?4, ?5, ?6, ?6 FROM incidents WHERE ${where} = ?2 AND status = ?7 AND ${guard}`)
              .bind(changes.turn, value, message.kind, message.channel, message.body, now, message.kind === "resolved" ? "resolved" : "open"),
          );
        }
      };
      for (const incident of changes.open) {
        statements.push(
          db
            .prepare(
              `INSERT INTO incidents (key, rule, source, subscriber, error_key, status, summary, count, since, opened_at, notified_at, last_seen_at)
               SELECT ?2, ?3, ?4, ?5, ?6, 'open', ?7, ?8, ?9, ?10, ?10, ?10 WHERE ${guard}
               ON CONFLICT (key) WHERE status = 'open' DO NOTHING`,
            )
            .bind(changes.turn, incident.key, incident.rule, incident.source, incident.subscriber, incident.errorKey, incident.summary, incident.count, isoTime(incident.sinceMs), now),
        );
        addMessages("key", incident.key, incident.messages);
      }
      for (const kept of changes.keep) {
        statements.push(
          db.prepare(`UPDATE incidents SET count = ?3, summary = ?4, last_seen_at = ?5 WHERE id = ?2 AND status = 'open' AND ${guard}`).bind(changes.turn, kept.id, kept.count, kept.summary, now),
        );
      }
      for (const reminded of changes.remind) {
        statements.push(db.prepare(`UPDATE incidents SET notified_at = ?3 WHERE id = ?2 AND status = 'open' AND ${guard}`).bind(changes.turn, reminded.id, now));
        addMessages("id", reminded.id, reminded.messages);
      }
      for (const resolved of changes.resolve) {
        statements.push(
          db.prepare(`UPDATE incidents SET status = 'resolved', resolved_at = ?3, last_seen_at = ?3 WHERE id = ?2 AND status = 'open' AND ${guard}`).bind(changes.turn, resolved.id, now),
        );
        addMessages("id", resolved.id, resolved.messages);
      }
      const [taken] = await db.batch(statements);
      return (taken?.meta.changes ?? 0) > 0;
    },

    async claimDueMessages(nowMs, claimUntilMs, limit) {
      const { results } = await db
        .prepare(
          `UPDATE alert_messages SET next_at = ?2
            WHERE id IN (SELECT id FROM alert_messages AS due WHERE status = 'pending' AND next_at <= ?1
                           AND NOT EXISTS (SELECT 1 FROM alert_messages AS older
                                            WHERE older.status = 'pending' AND older.next_at > ?1 AND older.channel = due.channel AND older.id < due.id)
                         ORDER BY id LIMIT ?3)
              AND status = 'pending' AND next_at <= ?1
           RETURNING ${MESSAGE_COLUMNS}`,
        )
        .bind(isoTime(nowMs), isoTime(claimUntilMs), limit)
        .all<MessageRow>();
      return results.map(messageFromRow).sort((a, b) => a.id - b.id);
    },

    async releaseMessages(ids, nowMs) {
      if (ids.length === 0) return;
      await db
        .prepare("UPDATE alert_messages SET next_at = ?2 WHERE id IN (SELECT value FROM json_each(?1)) AND status = 'pending'")
        .bind(JSON.stringify(ids), isoTime(nowMs))
        .run();
    },

    async settleMessage(id, outcome, nowMs) {
      const now = isoTime(nowMs);
      if (outcome.sent) {
        await db.prepare("UPDATE alert_messages SET status = 'sent', attempts = attempts + 1, sent_at = ?2, last_error = NULL WHERE id = ?1").bind(id, now).run();
        return;
      }
      await db
        .prepare("UPDATE alert_messages SET status = ?2, attempts = attempts + 1, next_at = ?3, last_error = ?4 WHERE id = ?1")
        .bind(id, outcome.nextAtMs === null ? "failed" : "pending", isoTime(outcome.nextAtMs ?? nowMs), outcome.error)
        .run();
    },

    async noteSignatureFailures(source, count, nowMs) {
      await db
        .prepare("INSERT INTO alert_signature_failures (source, minute, count) VALUES (?1, ?2, ?3) ON CONFLICT (source, minute) DO UPDATE SET count = count + excluded.count")
        .bind(source, minuteKey(nowMs), count)
        .run();
    },

    async noteHeartbeat(name, nowMs) {
      await db
        .prepare("INSERT INTO inbox_marks (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value")
        .bind(`${HEARTBEAT_MARK_PREFIX}${name}`, isoTime(nowMs))
        .run();
    },

    async listIncidents(limit) {
      const { results } = await db
        .prepare(
          `SELECT ${INCIDENT_COLUMNS} FROM (
             SELECT * FROM (SELECT * FROM incidents WHERE status = 'open' ORDER BY id DESC LIMIT ?1)
             UNION ALL
             SELECT * FROM (SELECT * FROM incidents WHERE status = 'resolved' ORDER BY id DESC LIMIT ?1))
           ORDER BY status = 'resolved', id DESC LIMIT ?1`,
        )
        .bind(limit)
        .all<IncidentRow>();
      return results.map(incidentFromRow);
    },

    async incident(id) {
      const row = await db.prepare(`SELECT ${INCIDENT_COLUMNS} FROM incidents WHERE id = ?1`).bind(id).first<IncidentRow>();
      return row ? incidentFromRow(row) : null;
    },

    async messagesOf(incidentIds) {
      if (incidentIds.length === 0) return [];
      const { results } = await db
        .prepare(`SELECT ${MESSAGE_COLUMNS} FROM alert_messages WHERE incident_id IN (SELECT value FROM json_each(?1)) ORDER BY id`)
        .bind(JSON.stringify(incidentIds))
        .all<MessageRow>();
      return results.map(messageFromRow);
    },

    async counts() {
      const [open, total, messages] = await db.batch([
        db.prepare("SELECT rule, COUNT(*) AS n FROM incidents WHERE status = 'open' GROUP BY rule"),
        db.prepare("SELECT COUNT(*) AS n FROM incidents"),
        db.prepare("SELECT channel, status, COUNT(*) AS n FROM alert_messages GROUP BY channel, status"),
      ]);
      return {
        openByRule: Object.fromEntries(((open?.results ?? []) as { rule: string; n: number }[]).map((row) => [row.rule, row.n])),
        incidents: ((total?.results[0] as { n: number } | undefined)?.n ?? 0),
        messages: (messages?.results ?? []) as { channel: string; status: MessageStatus; n: number }[],
      } satisfies AlertCounts;
    },

    async prune(beforeMs) {
      const before = isoTime(beforeMs);
      await db.batch([
        db.prepare("DELETE FROM alert_messages WHERE incident_id IN (SELECT id FROM incidents WHERE status = 'resolved' AND resolved_at < ?1)").bind(before),
        db.prepare("DELETE FROM incidents WHERE status = 'resolved' AND resolved_at < ?1").bind(before),
        db.prepare("DELETE FROM alert_signature_failures WHERE minute < ?1").bind(minuteKey(beforeMs)),
        db.prepare("DELETE FROM alert_failures WHERE failed_now = 0 AND last_at < ?1").bind(before),
      ]);
    },
  };
}
