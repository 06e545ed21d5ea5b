/**
 * What the soak asserts once everything settled, read in the store itself (D1 through
 * `wrangler d1 execute`, Postgres from Node): every event sent is stored once, done once (one
 * `done` entry in its attempt history), with one `payments` row of its amount; none failed; no
 * row nobody sent; every copy was answered 200.
 *
 * How often an event was answered `stored` is a figure, not an assertion: when a group-committed
 * insert fails as a whole (the database went away under it), each member writes its row alone and
 * answers `stored` even when it finds the row there, since the failed group may have landed it
 * (store/group-commit.ts). Two copies of one event in such a group are then both answered `stored`
 * (and both enqueued, which the lease and the row's status make harmless).
 */

/** Per delivery: its status, runs, and how many of its runs ended done or vanished. */
const ROWS_SQL = {
  d1: `SELECT source, id, status, attempts, error,
         (SELECT COUNT(*) FROM json_each(coalesce(attempt_log, '[]')) WHERE json_extract(value, '$.outcome') = 'done') AS done_runs,
         (SELECT COUNT(*) FROM json_each(coalesce(attempt_log, '[]')) WHERE json_extract(value, '$.outcome') = 'vanished') AS vanished_runs
       FROM deliveries`,
  postgres: `SELECT source, id, status, attempts, error,
         (SELECT count(*) FROM jsonb_array_elements(coalesce(attempt_log, '[]'::jsonb)) AS e WHERE e->>'outcome' = 'done') AS done_runs,
         (SELECT count(*) FROM jsonb_array_elements(coalesce(attempt_log, '[]'::jsonb)) AS e WHERE e->>'outcome' = 'vanished') AS vanished_runs
       FROM deliveries`,
};
const PAYMENTS_SQL = "SELECT delivery_id, amount FROM payments";

/**
 * Reads the store and checks it against what the provider sent.
 * @param {import("../e2e/harness.mjs").LocalInbox} inbox
 * @param {"d1" | "postgres"} store
 * @param {import("./provider.mjs").Provider} provider
 * @returns {Promise<{ figures: Record<string, unknown>, failures: string[] }>}
 */
export async function checkStore(inbox, store, provider) {
  const rows = await inbox.sql(ROWS_SQL[store]);
  const payments = await inbox.sql(PAYMENTS_SQL);
  const sent = provider.events;
  const failures = [];
  const fail = (what, examples) => failures.push(examples.length ? `${what}: ${examples.length} (e.g. ${examples.slice(0, 5).join(", ")})` : what);

  const rowsById = groupBy(rows, (row) => row.id);
  const duplicates = [...rowsById].filter(([, group]) => group.length > 1).map(([id, group]) => `${id} ×${group.length}`);
  const duplicatesStored = [...rowsById.values()].reduce((sum, group) => sum + group.length - 1, 0);
  const missing = [...sent.keys()].filter((id) => !rowsById.has(id));
  const unknown = [...rowsById.keys()].filter((id) => !sent.has(id));
  const byStatus = countBy(rows, (row) => row.status);
  const notDone = rows.filter((row) => row.status !== "done").map((row) => `${row.id} ${row.status}${row.error ? ` (${row.error})` : ""}`);
  const notDoneOnce = rows.filter((row) => row.status === "done" && Number(row.done_runs) !== 1).map((row) => `${row.id} done ${row.done_runs} times`);

  const paymentsById = groupBy(payments, (payment) => payment.delivery_id);
  const unpaid = [...sent.keys()].filter((id) => !paymentsById.has(id));
  const paidTwice = [...paymentsById].filter(([, group]) => group.length > 1).map(([id, group]) => `${id} ×${group.length}`);
  const paidUnknown = [...paymentsById.keys()].filter((id) => !sent.has(id));
  const wrongAmount = payments.filter((payment) => sent.has(payment.delivery_id) && Number(payment.amount) !== sent.get(payment.delivery_id)?.amount).map((payment) => payment.delivery_id);

  const storedTwice = [...sent].filter(([, event]) => event.storedAnswers > 1).map(([id, event]) => `${id} ×${event.storedAnswers}`);
  const neverAnswered = [...sent].filter(([, event]) => event.answered < event.copies).map(([id, event]) => `${id} ${event.answered}/${event.copies}`);

  if (neverAnswered.length) fail("copies never answered 200 (the provider gave up)", neverAnswered);
  if (missing.length) fail("events sent and not stored", missing);
  if (duplicatesStored) fail("duplicates stored", duplicates);
  if (unknown.length) fail("rows of events nobody sent", unknown);
  if (notDone.length) fail("deliveries not done", notDone);
  if (notDoneOnce.length) fail("deliveries done more than once (attempt history)", notDoneOnce);
  if (unpaid.length) fail("events without a payments row", unpaid);
  if (paidTwice.length) fail("events with more than one payments row", paidTwice);
  if (paidUnknown.length) fail("payments rows of events nobody sent", paidUnknown);
  if (wrongAmount.length) fail("payments rows whose amount is not the event's", wrongAmount);

  const runs = rows.reduce((sum, row) => sum + Number(row.attempts), 0);
  const figures = {
    stored: rows.length,
    done: byStatus.get("done") ?? 0,
    failed: byStatus.get("failed") ?? 0,
    "received or processing": (byStatus.get("received") ?? 0) + (byStatus.get("processing") ?? 0),
    "payments rows": payments.length,
    "duplicates stored": duplicatesStored,
    "handler runs counted": runs,
    "events answered stored more than once": storedTwice.length,
    "deliveries run more than once": rows.filter((row) => Number(row.attempts) > 1).length,
    "vanished runs recorded": rows.reduce((sum, row) => sum + Number(row.vanished_runs), 0),
  };
  return { figures, failures };
}

/** @template T @param {T[]} items @param {(item: T) => string} key @returns {Map<string, T[]>} */
function groupBy(items, key) {
  const groups = new Map();
  for (const item of items) {
    const group = groups.get(key(item));
    if (group) group.push(item);
    else groups.set(key(item), [item]);
  }
  return groups;
}

/** @template T @param {T[]} items @param {(item: T) => string} key @returns {Map<string, number>} */
function countBy(items, key) {
  const counts = new Map();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}
