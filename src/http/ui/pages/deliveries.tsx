/** `GET /ui/deliveries`: the filters (a GET form, so every view is a link), the lookup by id, and one page of deliveries. */
import { DELIVERY_STATUSES, LISTING_WINDOW, type DeliverySummary } from "../../../store";
import { Notice, Problems, RelativeTime, StatusBadge } from "../components";
import { sourceChoices } from "../filters";
import { shorten } from "../format";
import { bulkReplayHref, deliveryHref, listHref, type ListFilter } from "../links";

/** Characters of an error shown in the list; the delivery's page has it whole. */
const ERROR_CHARS = 90;

export interface DeliveriesPageProps {
  readonly filter: ListFilter;
  readonly problems: readonly string[];
  readonly deliveries: readonly DeliverySummary[];
  /** The cursor of the next page, or null on the last. */
  readonly nextCursor: string | null;
  /**
   * Set when the page stopped at the listing's window before it filled (a filter no index
   * serves): how far back it searched.
   */
  readonly searchedThrough?: string | null | undefined;
  /** Whether this is a later page (so "first page" makes sense). */
  readonly paged: boolean;
  /** A lookup by id that found no single delivery: what was looked for. */
  readonly lookup?: { readonly id: string; readonly source: string | undefined } | undefined;
  readonly nowMs: number;
}

export function DeliveriesPage(props: DeliveriesPageProps) {
  const { filter } = props;
  return (
    <>
      <h1>Deliveries</h1>
      <LookupForm lookup={props.lookup} source={filter.source} />
      <FilterForm filter={filter} />
      <Problems problems={props.problems} />
      {props.lookup ? (
        <Notice kind="info">
          <p>
            {props.deliveries.length === 0
              ? `No delivery has the id “${props.lookup.id}” ${props.lookup.source ? `in the source ${props.lookup.source}` : "in any configured source"}.`
              : `${props.deliveries.length} deliveries have the id “${props.lookup.id}”, one per source.`}
          </p>
        </Notice>
      ) : null}
      {filter.status === "failed" && props.deliveries.length > 0 ? (
        <p class="actions">
          <a class="button button-secondary" href={bulkReplayHref(filter)}>
            Replay the failed deliveries these filters match…
          </a>
        </p>
      ) : null}
      {props.searchedThrough && props.nextCursor ? (
        <Notice kind="info">
          <p>
            This page searched the deliveries received back to <time datetime={props.searchedThrough}>{props.searchedThrough}</time> (
            {LISTING_WINDOW.toLocaleString("en")} at most per page, so that a search never holds up the inbox).{" "}
            <a href={listHref(filter, props.nextCursor)}>Search further back</a>
          </p>
        </Notice>
      ) : null}
      <DeliveryTable deliveries={props.deliveries} nowMs={props.nowMs} />
      {props.lookup ? null : (
        <nav class="pager" aria-label="Pages">
          {props.paged ? <a href={listHref(filter)}>First page</a> : null}
          {props.nextCursor ? <a href={listHref(filter, props.nextCursor)}>Next page</a> : <span class="muted">No more deliveries.</span>}
        </nav>
      )}
    </>
  );
}

function LookupForm(props: { lookup: DeliveriesPageProps["lookup"]; source: string | undefined }) {
  return (
    <form class="filters" method="get" action="/ui/deliveries" role="search" aria-label="Find a delivery by id">
      <div class="field">
        <label for="lookup-id">Delivery id</label>
        <input id="lookup-id" name="id" type="search" value={props.lookup?.id ?? ""} maxlength={255} required class="mono" />
      </div>
      <SelectField id="lookup-source" name="source" label="In source" any="any source" choices={sourceChoices(props.lookup?.source)} selected={props.lookup?.source} />
      <button type="submit">Find</button>
    </form>
  );
}

/** A labelled select of `choices`, with a first, empty choice `any` (selected when `selected` is unset). */
function SelectField(props: { id: string; name: string; label: string; any: string; choices: readonly string[]; selected: string | undefined }) {
  const selected = props.selected ?? "";
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select id={props.id} name={props.name}>
        <option value="" selected={selected === ""}>
          {props.any}
        </option>
        {props.choices.map((choice) => (
          <option value={choice} selected={selected === choice}>
            {choice}
          </option>
        ))}
      </select>
    </div>
  );
}

function FilterForm(props: { filter: ListFilter }) {
  const { filter } = props;
  return (
    <form class="filters" method="get" action="/ui/deliveries" aria-label="Filter deliveries">
      <SelectField id="filter-status" name="status" label="Status" any="any status" choices={DELIVERY_STATUSES} selected={filter.status} />
      <SelectField id="filter-source" name="source" label="Source" any="any source" choices={sourceChoices(filter.source)} selected={filter.source} />
      <div class="field">
        <label for="filter-subscriber">Subscriber</label>
        <input id="filter-subscriber" name="subscriber" type="text" value={filter.subscriber ?? ""} maxlength={63} placeholder="forward" />
      </div>
      <div class="field">
        <label for="filter-event-type">Event type</label>
        <input id="filter-event-type" name="eventType" type="text" value={filter.eventType ?? ""} maxlength={255} placeholder="invoice.paid" />
      </div>
      <div class="field field-check">
        <input id="filter-unhandled" name="unhandled" type="checkbox" value="1" checked={filter.unhandled === true} />
        <label for="filter-unhandled">Only unhandled (done, no handler matched)</label>
      </div>
      <div class="field">
        <label for="filter-since">Received since (UTC)</label>
        <input id="filter-since" name="since" type="text" value={filter.since ?? ""} placeholder="2026-12-03T07:00" aria-describedby="time-hint" />
      </div>
      <div class="field">
        <label for="filter-until">Received before (UTC)</label>
        <input id="filter-until" name="until" type="text" value={filter.until ?? ""} placeholder="2026-12-03T08:00" aria-describedby="time-hint" />
      </div>
      <button type="submit">Filter</button>
      <a href="/ui/deliveries">Clear filters</a>
      <span id="time-hint" class="hint">
        Times in UTC: a date, or a date and time such as 2026-12-03T07:00.
      </span>
    </form>
  );
}

/** The deliveries as a table, newest first; each id links to its page. */
export function DeliveryTable(props: { deliveries: readonly DeliverySummary[]; nowMs: number }) {
  if (props.deliveries.length === 0) return <p>No deliveries match.</p>;
  return (
    <table>
      <caption class="visually-hidden">Deliveries, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Status</th>
          <th scope="col">Source</th>
          <th scope="col">Id</th>
          <th scope="col">Event type</th>
          <th scope="col" class="num">
            Attempts
          </th>
          <th scope="col">Last error</th>
          <th scope="col">Received</th>
          <th scope="col">Updated</th>
        </tr>
      </thead>
      <tbody>
        {props.deliveries.map((delivery) => (
          <tr>
            <td class="nowrap">
              <StatusBadge status={delivery.status} />
            </td>
            <td class="nowrap">{delivery.source}</td>
            <td class="mono break wide">
              <a href={deliveryHref(delivery)}>{delivery.id}</a>
            </td>
            <td class="break wide">{delivery.eventType ?? <span class="muted">none</span>}</td>
            <td class="num">{delivery.attempts}</td>
            <td class="break">{delivery.error === null ? "" : <span title={delivery.error}>{shorten(delivery.error, ERROR_CHARS)}</span>}</td>
            <td class="nowrap">
              <RelativeTime iso={delivery.receivedAt} nowMs={props.nowMs} />
            </td>
            <td class="nowrap">
              <RelativeTime iso={delivery.updatedAt} nowMs={props.nowMs} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
