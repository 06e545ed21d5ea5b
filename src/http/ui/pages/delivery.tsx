/**
 * `GET /ui/deliveries/:source/:id`: every field, the request headers, the body, the attempt
 * history, and what can be done (replay, or force replay behind a confirmation). Everything here
 * but the labels was sent by a provider, or by whoever holds a source's secret: JSX text only.
 */
import type { AttemptEntry, DeliveryDetail } from "../../../store";
import { viewBody } from "../body-view";
import { AbsoluteTime, CopyButton, Notice, OutcomeBadge, StatusBadge } from "../components";
import { bytesText, millisecondsText } from "../format";
import { deliveryHref } from "../links";
import { RunTable } from "./delivery-runs";

/** What a replay's redirect can say (`?notice=`): fixed texts, nothing from the query is shown. */
const NOTICES = {
  replayed: { kind: "info", text: "Replayed: the delivery is back in the queue with its attempts reset. Reload to follow it." },
  "in-flight": { kind: "error", text: "Not replayed: the delivery is still received or processing." },
  done: { kind: "error", text: "Not replayed: the delivery is done. Use Force replay to run its handler again." },
  "body-pruned": { kind: "error", text: "Not replayed: retention cleared its body, so its handler would have nothing to run on." },
} as const;

export type NoticeCode = keyof typeof NOTICES;

/** The notice of a `?notice=` code, or undefined for none or an unknown one. */
export function noticeFor(code: string | undefined): NoticeCode | undefined {
  return code !== undefined && Object.hasOwn(NOTICES, code) ? (code as NoticeCode) : undefined;
}

export function DeliveryPage(props: { delivery: DeliveryDetail; notice: NoticeCode | undefined; nowMs: number }) {
  const { delivery } = props;
  const notice = props.notice ? NOTICES[props.notice] : undefined;
  return (
    <>
      <p>
        <a href="/ui/deliveries">All deliveries</a> ›{" "}
        <a href={`/ui/deliveries?source=${encodeURIComponent(delivery.source)}`}>{delivery.source}</a>
      </p>
      <h1>
        <span class="mono">{delivery.id}</span> <StatusBadge status={delivery.status} />
      </h1>
      {notice ? (
        <Notice kind={notice.kind}>
          <p>{notice.text}</p>
        </Notice>
      ) : null}
      <Actions delivery={delivery} />
      <Fields delivery={delivery} nowMs={props.nowMs} />
      {delivery.runs.length > 0 ? (
        <>
          <h2 id="subscribers">Subscribers</h2>
          <RunTable delivery={delivery} nowMs={props.nowMs} />
        </>
      ) : null}
      <h2 id="attempts">Attempt history</h2>
      <AttemptTable entries={delivery.attemptLog} nowMs={props.nowMs} />
      <h2 id="headers">Request headers</h2>
      <HeaderTable headers={delivery.headers} />
      <h2 id="body">Body</h2>
      <Body delivery={delivery} />
    </>
  );
}

function Actions(props: { delivery: DeliveryDetail }) {
  const { delivery } = props;
  if (delivery.body === null && (delivery.status === "done" || delivery.status === "failed" || delivery.status === "filtered")) {
    return <p class="muted">Retention cleared the body of this delivery: it cannot be replayed.</p>;
  }
  if (delivery.status === "failed") {
    return (
      <div class="actions">
        <form method="post" action={deliveryHref(delivery, "/replay")}>
          <button type="submit">Replay</button>
        </form>
        <span class="muted">
          {delivery.runs.length > 0
            ? "Runs its failed subscribers again from attempt 1; what is done stays done. Replay once the cause is fixed."
            : "Runs its handler again from attempt 1. Replay once the cause is fixed."}
        </span>
      </div>
    );
  }
  if (delivery.status === "filtered") {
    return (
      <div class="actions">
        <form method="post" action={deliveryHref(delivery, "/replay")}>
          <button type="submit">Replay</button>
        </form>
        <span class="muted">Its source's filter kept it out (the reason is below). If the filter was wrong, replay runs it as a normal delivery.</span>
      </div>
    );
  }
  if (delivery.status === "done") {
    return (
      <div class="actions">
        <a class="button button-secondary" href={deliveryHref(delivery, "/replay")}>
          Force replay…
        </a>
        <span class="muted">It is done; a forced replay runs its handler again, after you confirm.</span>
      </div>
    );
  }
  return <p class="muted">In flight ({delivery.status}): nothing to replay.</p>;
}

function Fields(props: { delivery: DeliveryDetail; nowMs: number }) {
  const { delivery } = props;
  return (
    <dl class="fields">
      <dt>Source</dt>
      <dd>{delivery.source}</dd>
      <dt>Id</dt>
      <dd>
        <span class="mono">{delivery.id}</span>
        <CopyButton value={delivery.id} label="Copy the delivery id" />
      </dd>
      <dt>Subscriber</dt>
      <dd>{delivery.fanout !== null ? `fanned out to ${delivery.fanout} (below)` : (delivery.subscriber ?? <span class="muted">none</span>)}</dd>
      <dt>Event type</dt>
      <dd>{delivery.eventType ?? <span class="muted">none</span>}</dd>
      <dt>Status</dt>
      <dd>
        <StatusBadge status={delivery.status} />
      </dd>
      <dt>Attempts</dt>
      <dd>{delivery.attempts}</dd>
      <dt>Handled</dt>
      <dd>{handledText(delivery)}</dd>
      <dt>Duplicates</dt>
      <dd>
        {delivery.duplicates === 0 ? (
          <span class="muted">none: no copy of it came again</span>
        ) : (
          <>
            {delivery.duplicates} {delivery.duplicates === 1 ? "copy" : "copies"} answered "duplicate" (the provider sent it again), the last{" "}
            <AbsoluteTime iso={delivery.lastDuplicateAt!} nowMs={props.nowMs} />
          </>
        )}
      </dd>
      <dt>Last error</dt>
      <dd>{delivery.error === null ? <span class="muted">none</span> : <pre class="block" tabindex={0}>{delivery.error}</pre>}</dd>
      <dt>Received</dt>
      <dd>
        <AbsoluteTime iso={delivery.receivedAt} nowMs={props.nowMs} />
      </dd>
      <dt>Updated</dt>
      <dd>
        <AbsoluteTime iso={delivery.updatedAt} nowMs={props.nowMs} />
      </dd>
    </dl>
  );
}

/** Whether a handler ran, in words that fit every status: a failed delivery is not "not yet" handled. */
function handledText(delivery: DeliveryDetail) {
  if (delivery.handled === true) return "yes";
  if (delivery.handled === false) return "no: no handler matched (unhandled)";
  if (delivery.status === "filtered") return <span class="muted">no: its source's filter kept it out (see the reason)</span>;
  if (delivery.status === "failed") return <span class="muted">no: its handler failed (see the last error); replay it once the cause is fixed</span>;
  return <span class="muted">not yet</span>;
}

/**
 * The Attempt column of each entry: a replay starts the count again at 1, so the runs after one say
 * which round they belong to ("1 after replay 1"), and the replay's own row says what it was.
 */
function attemptLabels(entries: readonly AttemptEntry[]): string[] {
  let replays = 0;
  return entries.map((entry) => {
    if (entry.outcome === "replayed") return `replay ${++replays}`;
    if (entry.attempt === null) return "–";
    return replays === 0 ? String(entry.attempt) : `${entry.attempt} after replay ${replays}`;
  });
}

function AttemptTable(props: { entries: readonly AttemptEntry[]; nowMs: number }) {
  if (props.entries.length === 0) return <p class="muted">No attempt recorded yet (a first run is recorded when it ends).</p>;
  const labels = attemptLabels(props.entries);
  return (
    <table>
      <caption class="visually-hidden">Attempts and replays, oldest first</caption>
      <thead>
        <tr>
          <th scope="col" class="num">
            Attempt
          </th>
          <th scope="col">Started</th>
          <th scope="col" class="num">
            Took
          </th>
          <th scope="col">Outcome</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {props.entries.map((entry, index) => (
          <tr>
            <td class="num">{labels[index]}</td>
            <td class="nowrap">{entry.at === null ? <span class="muted">unknown</span> : <AbsoluteTime iso={entry.at} nowMs={props.nowMs} />}</td>
            <td class="num">{entry.ms === null ? "–" : millisecondsText(entry.ms)}</td>
            <td>
              <OutcomeBadge outcome={entry.outcome} />
              {entry.count === undefined ? null : <span title={`${entry.count} times in a row; started and took are the latest's`}> ×{entry.count}</span>}
            </td>
            <td class="break">{entry.error ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function HeaderTable(props: { headers: DeliveryDetail["headers"] }) {
  if (props.headers === null) {
    return <p class="muted">Not stored: received before the inbox kept headers, or cleared by retention with the body.</p>;
  }
  return (
    <>
      <table>
        <caption class="visually-hidden">Request headers as received</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          {props.headers.map(([name, value]) => (
            <tr>
              <th scope="row" class="mono break">
                {name}
              </th>
              <td class="mono break">{value}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="muted">Headers that carry a credential (Authorization, Cookie, a provider's token) are never stored.</p>
    </>
  );
}

const BODY_LABEL = { json: "JSON, pretty-printed", text: "text (UTF-8)", base64: "binary, shown as base64" } as const;

function Body(props: { delivery: DeliveryDetail }) {
  const { delivery } = props;
  if (delivery.body === null) return <p class="muted">Cleared by retention (BODY_RETENTION_DAYS after it was received).</p>;
  const view = viewBody(delivery.body);
  const download = (
    <a href={deliveryHref(delivery, "/body")} download="">
      Download the bytes as received
    </a>
  );
  if (view.kind === "too_large") {
    return (
      <p>
        {bytesText(view.bytes)}, too large to show here. {download}
      </p>
    );
  }
  return (
    <>
      <p>
        {bytesText(view.bytes)}, {BODY_LABEL[view.kind]}. {download}
      </p>
      <pre class="block" tabindex={0}>
        <code>{view.text}</code>
      </pre>
    </>
  );
}
