/**
 * The SQL that a delivery's own lifecycle (lifecycle.ts) and its subscribers' runs
 * (subscriber-runs.ts) share in D1: the fence every result passes, and the content type a claim reads.
 */

/**
 * Where a run's result may land, for token `?3`: the delivery is unsettled, and either no claim
 * newer than this one is recorded (a run D1 never saw), or this run is the recorded takeover.
 * Once a result landed (lease_token = ?3, no longer `processing`), the same statement changes
 * nothing: a result is never counted twice. Same rule as the trigger.
 */
export const RESULT_FENCE = "status IN ('received', 'processing') AND (coalesce(lease_token, 0) < ?3 OR (lease_token = ?3 AND status = 'processing'))";

/**
 * The stored `content-type` header (store/headers.ts: a JSON array of [name, value] pairs, names
 * lower-cased), read by the claim's own statement: forwarding needs it, and a query of its own
 * after the claim could fail on its own, which would count against the handler.
 * Null for a row of before migrations/0008, headers cleared by retention, or none sent.
 */
export const CONTENT_TYPE = `(SELECT json_extract(header.value, '$[1]') FROM json_each(CASE WHEN json_valid(headers) THEN headers END) AS header
                        WHERE json_extract(header.value, '$[0]') = 'content-type' LIMIT 1) AS content_type`;
