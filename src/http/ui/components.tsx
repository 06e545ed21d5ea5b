/** Small pieces the pages share: status badges, times, notices. Text only through JSX (escaped). */
import type { Child } from "hono/jsx";
import type { AttemptOutcome, DeliveryStatus } from "../../store";
import { relativeText, utcText } from "./format";

/** A delivery's status: its name in words, the colour only repeating it (never alone). */
export function StatusBadge(props: { status: DeliveryStatus }) {
  return <span class={`badge badge-${props.status}`}>{props.status}</span>;
}

/** The colour family of each attempt outcome; the word is always shown. */
const OUTCOME_TONE: Record<AttemptOutcome, string> = {
  done: "done",
  unhandled: "done",
  retry: "processing",
  deferred: "received",
  replayed: "received",
  vanished: "failed",
  failed: "failed",
};

export function OutcomeBadge(props: { outcome: AttemptOutcome }) {
  return <span class={`badge badge-${OUTCOME_TONE[props.outcome]}`}>{props.outcome}</span>;
}

/**
 * A time shown relative to now ("5 min ago"), the absolute UTC time on hover and in the
 * `datetime` attribute; the script keeps the relative text current.
 */
export function RelativeTime(props: { iso: string; nowMs: number }) {
  return (
    <time datetime={props.iso} title={utcText(props.iso)} data-relative="">
      {relativeText(props.iso, props.nowMs)}
    </time>
  );
}

/** An absolute UTC time, with the relative one after it. */
export function AbsoluteTime(props: { iso: string; nowMs: number }) {
  return (
    <>
      <time datetime={props.iso}>{utcText(props.iso)}</time>{" "}
      <span class="muted">
        (<RelativeTime iso={props.iso} nowMs={props.nowMs} />)
      </span>
    </>
  );
}

/** A message box; `role="status"` for news, `role="alert"` for problems. */
export function Notice(props: { kind: "info" | "error"; children: Child }) {
  return (
    <div class={`notice notice-${props.kind}`} role={props.kind === "error" ? "alert" : "status"}>
      {props.children}
    </div>
  );
}

/** The problems of a form or query, one per line, or nothing. */
export function Problems(props: { problems: readonly string[] }) {
  if (props.problems.length === 0) return null;
  return (
    <Notice kind="error">
      <p>Some filters could not be used:</p>
      <ul>
        {props.problems.map((problem) => (
          <li>{problem}</li>
        ))}
      </ul>
    </Notice>
  );
}

/** A button that copies `value` to the clipboard; hidden until the script shows it (it needs script). */
export function CopyButton(props: { value: string; label: string }) {
  return (
    <button type="button" class="copy" data-copy={props.value} aria-label={props.label} hidden>
      Copy
    </button>
  );
}
