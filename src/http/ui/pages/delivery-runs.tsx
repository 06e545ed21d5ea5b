/**
 * A fanned-out delivery's subscribers on its page (`GET /ui/deliveries/:source/:id`): each run's own
 * status, attempts and error, and a replay of that run alone when it failed. JSX text only.
 */
import type { DeliveryDetail } from "../../../store";
import { AbsoluteTime, StatusBadge } from "../components";
import { deliveryHref } from "../links";

/** A fanned-out delivery's runs, each with its own progress, and a replay for each failed one. */
export function RunTable(props: { delivery: DeliveryDetail; nowMs: number }) {
  const { delivery } = props;
  return (
    <table>
      <thead>
        <tr>
          <th>Subscriber</th>
          <th>Status</th>
          <th class="num">Attempts</th>
          <th>Updated</th>
          <th>Error</th>
          <th></th>
        </tr>
      </thead>
      <tbody>
        {delivery.runs.map((run) => (
          <tr>
            <td class="mono">{run.subscriber}</td>
            <td>
              <StatusBadge status={run.status} />
            </td>
            <td class="num">{run.attempts}</td>
            <td>
              <AbsoluteTime iso={run.updatedAt} nowMs={props.nowMs} />
            </td>
            <td>{run.error ?? ""}</td>
            <td>
              {run.status === "failed" && delivery.body !== null ? (
                <form method="post" action={deliveryHref(delivery, "/replay")}>
                  <input type="hidden" name="subscriber" value={run.subscriber} />
                  <button type="submit">Replay {run.subscriber}</button>
                </form>
              ) : null}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
