/** The replay confirmations: force replay of one done delivery, and bulk replay of failed ones by filters. */
import type { DeliveryDetail } from "../../../store";
import { Notice, Problems, StatusBadge } from "../components";
import { utcText } from "../format";
import { deliveryHref, listHref, type ListFilter } from "../links";

/** Asks before a done delivery's handler runs again. */
export function ForceReplayPage(props: { delivery: DeliveryDetail }) {
  const { delivery } = props;
  return (
    <>
      <h1>Run this delivery's handler again?</h1>
      <p>
        <span class="mono">{delivery.source}</span> / <span class="mono">{delivery.id}</span> <StatusBadge status={delivery.status} /> (
        {delivery.eventType ?? "no event type"})
      </p>
      <Notice kind="error">
        <p>
          It is done: its handler ran and its effects were committed. A forced replay runs the handler again on the same body. A handler that keys its
          effects by the delivery (as the example payment handler does) adds nothing; any other may act twice.
        </p>
      </Notice>
      <div class="actions">
        <form method="post" action={deliveryHref(delivery, "/replay")}>
          <input type="hidden" name="force" value="true" />
          <button type="submit" class="button-danger">
            Yes, run its handler again
          </button>
        </form>
        <a href={deliveryHref(delivery)}>Cancel</a>
      </div>
    </>
  );
}

/** The filter in words, for a confirmation: "of the source stripe, received since …". */
function describeFilter(filter: ListFilter): string {
  const parts: string[] = [];
  if (filter.source) parts.push(`of the source ${filter.source}`);
  if (filter.subscriber) parts.push(`that failed for the subscriber ${filter.subscriber}`);
  if (filter.eventType) parts.push(`of the event type ${filter.eventType}`);
  if (filter.since) parts.push(`received since ${utcText(filter.since)}`);
  if (filter.until) parts.push(`received before ${utcText(filter.until)}`);
  return parts.length === 0 ? "of every source" : parts.join(", ");
}

export interface BulkReplayProps {
  readonly filter: ListFilter;
  readonly problems: readonly string[];
  /** Failed deliveries matching now (with a body: those a replay would take). */
  readonly matching: number;
  /** A run in progress: how many were replayed so far, and how many of those confirmed are left. */
  readonly progress?: { readonly replayed: number; readonly left: number } | undefined;
  readonly batchSize: number;
}

/** The confirmation (and, between batches, the progress) of a bulk replay. */
export function BulkReplayPage(props: BulkReplayProps) {
  const { filter, progress } = props;
  const failedList = listHref({ ...filter, status: "failed" });
  const left = progress ? Math.min(progress.left, props.matching) : props.matching;
  const next = Math.min(left, props.batchSize);
  return (
    <>
      <h1>Replay failed deliveries</h1>
      <Problems problems={props.problems} />
      {progress ? (
        <Notice kind="info">
          <p>
            Replayed {progress.replayed} so far.{" "}
            {left === 0
              ? "Done: every delivery you confirmed was replayed. They are back in the queue, their results pending: the failed list shows any that fail again."
              : `${left} of those you confirmed are left.`}
          </p>
        </Notice>
      ) : null}
      <p>
        {props.matching === 0 ? "No failed delivery" : props.matching === 1 ? "1 failed delivery" : `${props.matching} failed deliveries`}{" "}
        {describeFilter(filter)} can be replayed now. <a href={failedList}>See them</a>.
      </p>
      {props.problems.length > 0 ? (
        // The form would send the filters it could read and replay a wider set than asked for.
        <p>
          Fix the filters first: <a href={failedList}>back to the failed deliveries</a>.
        </p>
      ) : left === 0 ? (
        <p>
          <a href={failedList}>Back to the failed deliveries</a>
        </p>
      ) : (
        <>
          <p>
            A replay puts each back in the queue with its attempts reset, oldest first, {props.batchSize} at a time
            {left > props.batchSize ? "; you confirm each batch" : ""}. Replay once the cause is fixed: a payload that is still broken fails again.
          </p>
          <form method="post" action="/ui/replay" class="actions">
            <input type="hidden" name="source" value={filter.source ?? ""} />
            <input type="hidden" name="subscriber" value={filter.subscriber ?? ""} />
            <input type="hidden" name="eventType" value={filter.eventType ?? ""} />
            <input type="hidden" name="since" value={filter.since ?? ""} />
            <input type="hidden" name="until" value={filter.until ?? ""} />
            <input type="hidden" name="left" value={String(left)} />
            <input type="hidden" name="replayed" value={String(progress?.replayed ?? 0)} />
            <button type="submit">{progress ? `Replay the next ${next}` : next === left ? `Replay ${left}` : `Replay the first ${next} of ${left}`}</button>
            <a href={failedList}>Cancel</a>
          </form>
        </>
      )}
    </>
  );
}
