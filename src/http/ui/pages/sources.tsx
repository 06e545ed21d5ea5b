/**
 * `GET /ui/sources`: the sources a user has (a secret set, or deliveries stored) with their
 * provider's security grade: the level, the four points it is read from, what it means, and the
 * dedup key. Every text is the provider's or the source's name, rendered through JSX (escaped).
 */
import { gradeLevel, gradeNotes } from "../../../providers/grade";
import type { SecurityGrade } from "../../../providers/types";

export interface SourceRow {
  readonly source: string;
  /** The provider's kind, or null for a source with deliveries that src/sources.ts no longer names. */
  readonly provider: string | null;
  readonly grade: SecurityGrade | null;
  readonly dedupKey: string | null;
  readonly configured: boolean;
}

/** The anchor of a source's row, linked from the overview. */
export function sourceAnchor(source: string): string {
  return `source-${encodeURIComponent(source)}`;
}

/** A grade's level as a badge (the word always shown; the colour repeats it). */
export function GradeBadge(props: { grade: SecurityGrade | null }) {
  if (props.grade === null) return <span class="muted">unknown</span>;
  const level = gradeLevel(props.grade);
  return <span class={`badge badge-grade-${level}`}>{level}</span>;
}

const mark = (value: boolean | "partly") => (value === "partly" ? "partly" : value ? "yes" : "no");

export function SourcesPage(props: { rows: readonly SourceRow[]; unconfigured: number }) {
  return (
    <>
      <h1>Sources</h1>
      <p>
        A source's <strong>security grade</strong> says what its provider's signature covers. <strong>strong</strong>: the body, a
        timestamp (checked both ways) and the delivery id are signed, and the secret never travels. <strong>fair</strong>: signed, with a
        gap (no timestamp: a captured request stays valid and only the dedup key stops its replay; an unsigned id; selected fields only).{" "}
        <strong>weak</strong>: the body is not signed or the secret travels with every request, so the secret, or one captured request, can
        send any body: treat the content as a hint and fetch the resource from the provider's API. The provider decides the grade, not
        your configuration; the project's <code>docs/providers.md</code> (section "Security grade") explains each point.
      </p>
      {props.rows.length === 0 ? (
        <p>No source has a secret set or a delivery yet.</p>
      ) : (
        <table>
          <caption class="visually-hidden">Sources, their security grade and dedup key</caption>
          <thead>
            <tr>
              <th scope="col">Source</th>
              <th scope="col">Provider</th>
              <th scope="col">Grade</th>
              <th scope="col">Body signed</th>
              <th scope="col">Timestamp signed</th>
              <th scope="col">Id signed</th>
              <th scope="col">Secret in clear</th>
              <th scope="col">What it means</th>
              <th scope="col">Dedup key</th>
            </tr>
          </thead>
          <tbody>
            {props.rows.map((row) => (
              <tr id={sourceAnchor(row.source)}>
                <th scope="row">
                  <a href={`/ui/deliveries?source=${encodeURIComponent(row.source)}`}>{row.source}</a>
                  {row.configured ? null : <span class="hint"> (no secret set)</span>}
                </th>
                <td>{row.provider ?? <span class="muted">not in src/sources.ts</span>}</td>
                <td>
                  <GradeBadge grade={row.grade} />
                </td>
                <td>{row.grade ? mark(row.grade.bodySigned) : "-"}</td>
                <td>{row.grade ? mark(row.grade.timestampSigned) : "-"}</td>
                <td>{row.grade ? mark(row.grade.deliveryIdSigned) : "-"}</td>
                <td>{row.grade ? mark(row.grade.secretInClear) : "-"}</td>
                <td>
                  {row.grade ? (
                    <ul class="notes">
                      {gradeNotes(row.grade).map((note) => (
                        <li>{note}</li>
                      ))}
                    </ul>
                  ) : (
                    "-"
                  )}
                </td>
                <td>{row.dedupKey ?? "-"}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.unconfigured > 0 ? (
        <p class="muted">
          {props.unconfigured} more providers in the catalogue have no secret set here (set <code>&lt;SOURCE&gt;_WEBHOOK_SECRET</code> to
          use one).
        </p>
      ) : null}
    </>
  );
}
