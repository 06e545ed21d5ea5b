/**
 * `webhook-inbox sources`: every source of the inbox (GET /admin/sources) with its security grade,
 * what the grade means, its dedup key and whether its secret is set. The levels and notes say what
 * the dashboard's Sources page says (src/providers/grade.ts); docs/providers.md ("Security grade")
 * explains each point.
 */
import { table } from "./format.mjs";

/** @typedef {{ bodySigned: boolean | "partly", timestampSigned: boolean, deliveryIdSigned: boolean, secretInClear: boolean }} Grade */

export const GRADE_HELP = `Grades (the provider decides them, not your configuration; docs/providers.md, "Security grade"):
  strong  body, a timestamp (checked both ways) and the delivery id signed; the secret never travels
  fair    signed, with a gap: no timestamp (a captured request stays valid; the dedup key stops its
          replay), an unsigned delivery id, or only selected fields signed
  weak    the body is not signed or the secret travels with every request: the secret, or one
          captured request, can send any body (treat it as a hint; fetch from the provider's API)`;

/**
 * @param {Grade} grade
 * @returns {"strong" | "fair" | "weak"}
 */
export function gradeLevel(grade) {
  if (grade.bodySigned === false || grade.secretInClear) return "weak";
  if (grade.bodySigned === true && grade.timestampSigned && grade.deliveryIdSigned) return "strong";
  return "fair";
}

/**
 * The gaps of a grade in a few words, "-" when there is none.
 * @param {Grade} grade
 * @example
 * gradeGaps({ bodySigned: true, timestampSigned: false, deliveryIdSigned: false, secretInClear: false }); // "no timestamp, id unsigned"
 */
export function gradeGaps(grade) {
  const gaps = [];
  if (grade.bodySigned === false) gaps.push("body unsigned");
  if (grade.bodySigned === "partly") gaps.push("body partly signed");
  if (!grade.timestampSigned) gaps.push("no timestamp");
  if (!grade.deliveryIdSigned) gaps.push("id unsigned");
  if (grade.secretInClear) gaps.push("secret in clear");
  return gaps.length > 0 ? gaps.join(", ") : "-";
}

/**
 * Text from the inbox, made safe for a terminal: control characters (an escape sequence could
 * rewrite the screen or the title) become "?".
 * @param {unknown} value
 */
export function terminalSafe(value) {
  return value === null || value === undefined ? value : String(value).replace(/[\u0000-\u001f\u007f-\u009f]/g, "?");
}

/**
 * @param {{ get(path: string): Promise<any> }} client
 * @param {((json: unknown) => void) | null} print
 * @param {(line: string) => void} out
 * @param {{ all?: boolean }} [options] `all`: also the catalogue's sources without a secret set
 */
export async function sources(client, print, out, options = {}) {
  const answer = await client.get("/sources");
  if (print) return print(answer);
  /** @type {{ source: string, provider: string, grade: Grade | null, dedupKey: string | null, configured: boolean }[]} */
  const all = answer.sources;
  const shown = options.all ? all : all.filter((row) => row.configured);
  if (shown.length === 0) out("no source has a secret set (webhook-inbox sources --all lists the catalogue)");
  else
    out(
      table(
        ["SOURCE", "PROVIDER", "GRADE", "GAPS", "SECRET", "DEDUP KEY"],
        shown.map((row) => [
          terminalSafe(row.source),
          terminalSafe(row.provider),
          row.grade ? gradeLevel(row.grade) : "unknown",
          row.grade ? gradeGaps(row.grade) : null,
          row.configured ? "set" : "not set",
          terminalSafe(row.dedupKey),
        ]),
        { maxWidth: 80 },
      ),
    );
  const hidden = all.length - shown.length;
  if (hidden > 0) out(`\n${hidden} more in the catalogue without a secret set (--all lists them)`);
  out("");
  out(GRADE_HELP);
}
