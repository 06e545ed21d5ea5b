/**
 * The overview's section on forward destinations: each configured destination's circuit breaker
 * (forwarding/breakers.ts), read once per page view. Every value is text escaped by JSX; the
 * origin is shown without its path or query (a query may carry a token).
 */
import type { DestinationBreaker } from "../../../forwarding/breakers";
import { RelativeTime } from "../components";

const STATE_TEXT: Record<DestinationBreaker["status"], string> = {
  closed: "closed (sending)",
  open: "open (waiting for the next probe)",
  "half-open": "half-open (a probe is in flight)",
  unknown: "unknown (its state could not be read)",
};

export function DestinationsSection(props: { breakers: readonly DestinationBreaker[]; nowMs: number }) {
  if (props.breakers.length === 0) return null;
  return (
    <>
      <h2 id="destinations">Forward destinations</h2>
      <table aria-labelledby="destinations">
        <caption class="visually-hidden">Each forward destination's circuit breaker</caption>
        <thead>
          <tr>
            <th scope="col">Source vars</th>
            <th scope="col">Destination</th>
            <th scope="col">Origin</th>
            <th scope="col">Breaker</th>
            <th scope="col">Since</th>
            <th scope="col" class="num">
              Failures in a row
            </th>
            <th scope="col" class="num">
              Waiting
            </th>
            <th scope="col">Next probe</th>
          </tr>
        </thead>
        <tbody>
          {props.breakers.map((breaker) => (
            <tr data-breaker={breaker.status}>
              <th scope="row">{breaker.prefix}</th>
              <td>{breaker.name}</td>
              <td>{breaker.origin}</td>
              <td>
                <span class={`badge breaker-${breaker.status}`}>{STATE_TEXT[breaker.status]}</span>
              </td>
              <td>{breaker.sinceMs === null ? "—" : <RelativeTime iso={new Date(breaker.sinceMs).toISOString()} nowMs={props.nowMs} />}</td>
              <td class="num">{breaker.failures}</td>
              <td class="num">{breaker.waiting}</td>
              <td>{breaker.reopenAtMs === null ? "—" : <RelativeTime iso={new Date(breaker.reopenAtMs).toISOString()} nowMs={props.nowMs} />}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </>
  );
}
