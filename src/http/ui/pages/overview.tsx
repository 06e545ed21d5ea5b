/** `GET /ui`: what is waiting, what failed, per source, and the last 24 hours. Every number is a link to its list. */
import { DELIVERY_STATUSES, type DeliveryStatus, type StatusCounts } from "../../../store";
import type { Overview } from "../../../store/snapshot";
import { RelativeTime, StatusBadge } from "../components";
import { durationText, percentText, utcText } from "../format";
import { listHref, type ListFilter } from "../links";
import { HourlyChart, hourLabel } from "./chart";
import { GradeBadge, sourceAnchor } from "./sources";
import { SOURCES } from "../../../sources";
import type { DestinationBreaker } from "../../../forwarding/breakers";
import { DestinationsSection } from "./destinations";

const HOUR_MS = 3_600_000;

/** A count that links to the deliveries it counts. */
function CountLink(props: { value: number; filter: ListFilter; label: string }) {
  return (
    <a href={listHref(props.filter)} aria-label={`${props.value} ${props.label}`}>
      {props.value}
    </a>
  );
}

const total = (counts: StatusCounts) => DELIVERY_STATUSES.reduce((sum, status) => sum + counts[status], 0);

export function OverviewPage(props: { overview: Overview; nowMs: number; breakers?: readonly DestinationBreaker[] }) {
  const { overview } = props;
  const dayAgo = new Date(Date.parse(overview.hourly[0]?.hour ?? overview.asOf)).toISOString();
  // The oldest waiting delivery was received at or before this second: its list, oldest at the end.
  const oldestBefore =
    overview.oldestWaitingSeconds === null ? undefined : new Date(Math.floor(props.nowMs / 1000 - overview.oldestWaitingSeconds + 1) * 1000).toISOString();
  const sources = Object.keys(overview.bySource).sort();
  return (
    <>
      <h1>Overview</h1>
      <p class="muted">
        Counts as of <RelativeTime iso={overview.asOf} nowMs={props.nowMs} /> ({utcText(overview.asOf)}): counted at each view while the
        inbox is small; under load, a snapshot at most a minute old. This page reloads itself every minute.
      </p>

      <h2 id="by-status">By status</h2>
      <ul class="cards" aria-labelledby="by-status">
        {DELIVERY_STATUSES.map((status: DeliveryStatus) => (
          <li class="card">
            <span class="label">
              <StatusBadge status={status} />
            </span>
            <span class="value">
              <CountLink value={overview.counts[status]} filter={{ status }} label={`${status} deliveries`} />
            </span>
          </li>
        ))}
        <li class="card">
          <span class="label">Oldest waiting</span>
          <span class="value">
            {overview.oldestWaitingSeconds === null ? (
              "none"
            ) : (
              <a href={listHref({ status: "received", until: oldestBefore })}>{durationText(overview.oldestWaitingSeconds)}</a>
            )}
          </span>
        </li>
        <li class="card">
          <span class="label">Unhandled (done, no handler matched)</span>
          <span class="value">
            <CountLink value={overview.unhandled} filter={{ unhandled: true }} label="unhandled deliveries" />
          </span>
        </li>
        <li class="card">
          <span class="label">Duplicates recognised (a provider sent a delivery again)</span>
          <span class="value">{overview.duplicates}</span>
        </li>
      </ul>

      <h2 id="last-day">Last 24 hours</h2>
      <ul class="cards" aria-labelledby="last-day">
        <li class="card">
          <span class="label">Received</span>
          <span class="value">
            <CountLink value={overview.last24h.received} filter={{ since: dayAgo }} label="received in the last 24 hours" />
          </span>
        </li>
        <li class="card">
          <span class="label">Failed (of those)</span>
          <span class="value">
            <CountLink value={overview.last24h.failed} filter={{ status: "failed", since: dayAgo }} label="failed of those received in the last 24 hours" />
          </span>
        </li>
        <li class="card">
          <span class="label">Failure rate</span>
          <span class="value">{percentText(overview.last24h.failureRate)}</span>
        </li>
      </ul>
      <HourlyChart hours={overview.hourly} />
      <ul class="legend" aria-hidden="true">
        <li>
          <span class="swatch swatch-received" />
          received
        </li>
        <li>
          <span class="swatch swatch-failed" />
          failed
        </li>
      </ul>
      <details>
        <summary>Every hour as a table</summary>
        <table>
          <caption>Deliveries received per hour (UTC), and how many of them failed, oldest first</caption>
          <thead>
            <tr>
              <th scope="col">Hour (UTC)</th>
              <th scope="col" class="num">
                Received
              </th>
              <th scope="col" class="num">
                Failed
              </th>
            </tr>
          </thead>
          <tbody>
            {overview.hourly.map((hour) => {
              const range = { since: hour.hour, until: new Date(Date.parse(hour.hour) + HOUR_MS).toISOString() };
              return (
                <tr>
                  <th scope="row">
                    {hour.hour.slice(0, 10)} {hourLabel(hour.hour)}
                  </th>
                  <td class="num">
                    <CountLink value={hour.received} filter={range} label={`received in the hour from ${hourLabel(hour.hour)}`} />
                  </td>
                  <td class="num">
                    <CountLink value={hour.failed} filter={{ ...range, status: "failed" }} label={`failed of those received in the hour from ${hourLabel(hour.hour)}`} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </details>

      <h2>By source</h2>
      {sources.length === 0 ? (
        <p>No deliveries yet.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Deliveries by source and status</caption>
          <thead>
            <tr>
              <th scope="col">Source</th>
              {DELIVERY_STATUSES.map((status) => (
                <th scope="col" class="num">
                  {status}
                </th>
              ))}
              <th scope="col" class="num">
                total
              </th>
              <th scope="col" class="num">
                duplicates
              </th>
              <th scope="col">
                <a href="/ui/sources">security grade</a>
              </th>
            </tr>
          </thead>
          <tbody>
            {sources.map((source) => {
              const counts = overview.bySource[source]!;
              return (
                <tr>
                  <th scope="row">{source}</th>
                  {DELIVERY_STATUSES.map((status) => (
                    <td class="num">
                      <CountLink value={counts[status]} filter={{ source, status }} label={`${status} deliveries of ${source}`} />
                    </td>
                  ))}
                  <td class="num">
                    <CountLink value={total(counts)} filter={{ source }} label={`deliveries of ${source}`} />
                  </td>
                  <td class="num">{overview.duplicatesBySource[source] ?? 0}</td>
                  <td>
                    <a href={`/ui/sources#${sourceAnchor(source)}`} aria-label={`security grade of ${source}`}>
                      <GradeBadge grade={Object.hasOwn(SOURCES, source) ? (SOURCES[source]!.grade ?? null) : null} />
                    </a>
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <DestinationsSection breakers={props.breakers ?? []} nowMs={props.nowMs} />
    </>
  );
}
