/**
 * `GET /ui/incidents`: alerting's incidents, open first, then the recent ones, each with its
 * timeline (opened, every message per channel and whether it was delivered, resolved); and
 * `GET /ui/incidents/:id`, one of them. Text from a handler's error is in summaries: JSX escapes it.
 */
import { RULE_TITLES } from "../../../alerts/message";
import type { IncidentRecord, OutboxMessage } from "../../../store";
import { AbsoluteTime, RelativeTime } from "../components";
import { utcText } from "../format";

/** A rule's title (alerts/message.ts, as the messages say it), or its name for one this version does not know. */
const ruleTitle = (rule: string): string => (RULE_TITLES as Record<string, string>)[rule] ?? rule;

const MESSAGE_TONE = { sent: "done", pending: "received", failed: "failed" } as const;
const MESSAGE_WORDS = { sent: "delivered", pending: "not delivered yet", failed: "given up" } as const;

export interface IncidentView {
  readonly incident: IncidentRecord;
  readonly messages: readonly OutboxMessage[];
}

function IncidentBadge(props: { status: IncidentRecord["status"] }) {
  return <span class={`badge badge-${props.status === "open" ? "failed" : "done"}`}>{props.status}</span>;
}

function about(incident: IncidentRecord): string {
  return [incident.source, incident.subscriber].filter((part) => part !== null).join(" / ") || "the inbox";
}

/** One incident's events, oldest first. */
function Timeline(props: { view: IncidentView; nowMs: number }) {
  const { incident, messages } = props.view;
  return (
    <ol class="timeline">
      <li>
        <AbsoluteTime iso={incident.openedAt} nowMs={props.nowMs} />: opened (holding since <time datetime={incident.since}>{utcText(incident.since)}</time>)
      </li>
      {messages.map((message) => (
        <li>
          <time datetime={message.createdAt}>{utcText(message.createdAt)}</time>: {message.kind} message to {message.channel}{" "}
          <span class={`badge badge-${MESSAGE_TONE[message.status]}`}>{MESSAGE_WORDS[message.status]}</span>
          {message.sentAt ? <> at <time datetime={message.sentAt}>{utcText(message.sentAt)}</time></> : null}
          {message.attempts > 1 || message.status !== "sent" ? ` after ${message.attempts} ${message.attempts === 1 ? "try" : "tries"}` : null}
          {message.status === "pending" && message.attempts > 0 ? <> (next try <RelativeTime iso={message.nextAt} nowMs={props.nowMs} />)</> : null}
          {message.lastError ? <span class="muted"> ({message.lastError})</span> : null}
        </li>
      ))}
      {incident.resolvedAt ? (
        <li>
          <AbsoluteTime iso={incident.resolvedAt} nowMs={props.nowMs} />: resolved
        </li>
      ) : null}
    </ol>
  );
}

function IncidentSection(props: { view: IncidentView; nowMs: number; heading: "h2" | "h3" }) {
  const { incident } = props.view;
  const Heading = props.heading;
  return (
    <section class="incident" aria-labelledby={`incident-${incident.id}`}>
      <Heading id={`incident-${incident.id}`}>
        <a href={`/ui/incidents/${incident.id}`}>#{incident.id}</a> {ruleTitle(incident.rule)}: {about(incident)} <IncidentBadge status={incident.status} />
      </Heading>
      <p>{incident.summary}</p>
      <p class="muted">
        How many: {incident.count} · last seen <RelativeTime iso={incident.lastSeenAt} nowMs={props.nowMs} />
      </p>
      <Timeline view={props.view} nowMs={props.nowMs} />
    </section>
  );
}

export function IncidentsPage(props: { views: readonly IncidentView[]; channels: readonly string[]; nowMs: number }) {
  const open = props.views.filter((view) => view.incident.status === "open");
  const recent = props.views.filter((view) => view.incident.status !== "open");
  return (
    <>
      <h1>Incidents</h1>
      <p class="muted">
        {props.channels.length === 0
          ? "No alert channel is configured: incidents are recorded here only (docs/operations.md, Alerts)."
          : `Told to: ${props.channels.join(", ")}.`}{" "}
        Rules are evaluated at most once a minute. This page reloads itself every minute.
      </p>
      <h2>Open ({open.length})</h2>
      {open.length === 0 ? <p>Nothing is wrong.</p> : open.map((view) => <IncidentSection view={view} nowMs={props.nowMs} heading="h3" />)}
      <h2>Recent</h2>
      {recent.length === 0 ? <p>None resolved yet.</p> : recent.map((view) => <IncidentSection view={view} nowMs={props.nowMs} heading="h3" />)}
    </>
  );
}

export function IncidentPage(props: { view: IncidentView; nowMs: number }) {
  return (
    <>
      <p>
        <a href="/ui/incidents">All incidents</a>
      </p>
      <IncidentSection view={props.view} nowMs={props.nowMs} heading="h2" />
    </>
  );
}
