/**
 * The SQL that a delivery's own lifecycle (lifecycle.ts) and its subscribers' runs
 * (subscriber-runs.ts) share in Postgres: the fence every result passes, and the content type a claim reads.
 */

/**
 * Where a run's result may land, for the token `$3`: the delivery is unsettled, and either no claim
 * newer than this one is recorded, or this run is the recorded takeover. Same rule as the trigger.
 */
export const RESULT_FENCE = "status IN ('received', 'processing') AND (coalesce(lease_token, 0) < $3::bigint OR (lease_token = $3::bigint AND status = 'processing'))";

/**
 * The stored `content-type` header (headers.ts: [[name, value], …], names lower-cased), read by the
 * claim's own statement (store/d1/lifecycle.ts says why). Null when none was stored.
 */
export const CONTENT_TYPE = `(SELECT header ->> 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(headers) = 'array' THEN headers END) AS header
                        WHERE header ->> 0 = 'content-type' LIMIT 1) AS content_type`;
