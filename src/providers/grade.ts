/**
 * A security grade in words, for the dashboard: one level and what it means for the user. The
 * CLI says the same in src/cli/lib/sources.mjs (it reads the grade over HTTP and imports no TS).
 * docs/providers.md ("Security grade") explains each point at length.
 */
import type { SecurityGrade } from "./types";

/**
 * `strong`: body, timestamp and delivery id signed, no secret on the wire. `weak`: the body is not
 * signed or the secret travels with every request (one captured request, or the secret, sends any
 * body). `fair`: signed, with a gap (no timestamp, an unsigned id, selected fields only).
 */
export type GradeLevel = "strong" | "fair" | "weak";

export function gradeLevel(grade: SecurityGrade): GradeLevel {
  if (grade.bodySigned === false || grade.secretInClear) return "weak";
  if (grade.bodySigned === true && grade.timestampSigned && grade.deliveryIdSigned) return "strong";
  return "fair";
}

/**
 * What the grade means, one short sentence per gap (or one saying there is none).
 * @example
 * gradeNotes({ bodySigned: true, timestampSigned: false, deliveryIdSigned: false, secretInClear: false });
 * // ["no signed timestamp: a captured request stays valid; the dedup key stops its replay", "delivery id not signed: a copy under a new id is caught by its content"]
 */
export function gradeNotes(grade: SecurityGrade): string[] {
  const notes: string[] = [];
  if (grade.bodySigned === false) notes.push("body not signed: whoever has the secret or one captured request can send any body");
  if (grade.bodySigned === "partly") notes.push("only selected fields of the body are signed");
  if (!grade.timestampSigned) notes.push("no signed timestamp: a captured request stays valid; the dedup key stops its replay");
  if (!grade.deliveryIdSigned) notes.push("delivery id not signed: a copy under a new id is caught by its content");
  if (grade.secretInClear) notes.push("the secret travels in every request");
  return notes.length > 0 ? notes : ["body, timestamp and delivery id signed; the secret never travels"];
}
