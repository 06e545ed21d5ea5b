/**
 * Evaluating a parsed filter against one delivery. A field that is absent, or holds a value of
 * another type than the operator compares (a numeric compare on a string, a prefix on a number),
 * is no match, never an error: a filter decides, it does not fail. A failure names the clause
 * that failed and the value it saw, as Trigger.dev records a filtered run.
 */
import { readField, renderField, resolveField } from "./field";
import { FILTER_LIMITS, OPERATORS, type FieldClause, type Filter, type FilterInput, type FilterVerdict, type Operator } from "./types";

type Failure = { match: false; clause: string; saw: string | null };

const MATCH = { match: true } as const;

/** `text` cut to `max` characters, with an ellipsis when cut. */
function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** A seen value as JSON text, truncated; null when the field is absent. */
function sawText(value: unknown): string | null {
  if (value === undefined) return null;
  return truncate(JSON.stringify(value) ?? "null", FILTER_LIMITS.maxSawLength);
}

/** Whether `value` satisfies one operator with `operand`. */
function holds(operator: Operator, operand: unknown, value: unknown): boolean {
  switch (operator) {
    case "exists":
      return (value !== undefined) === operand;
    case "equals":
      return value !== undefined && value === operand;
    case "oneOf":
      return value !== undefined && (operand as readonly unknown[]).includes(value);
    case "prefix":
      return typeof value === "string" && value.startsWith(operand as string);
    case "gt":
      return typeof value === "number" && value > (operand as number);
    case "gte":
      return typeof value === "number" && value >= (operand as number);
    case "lt":
      return typeof value === "number" && value < (operand as number);
    case "lte":
      return typeof value === "number" && value <= (operand as number);
  }
}

/** One operator of a leaf as it reads: `body.amount gte 100`. */
function renderOperator(field: string, operator: Operator, operand: unknown): string {
  return `${field} ${operator} ${JSON.stringify(operand)}`;
}

function isLeaf(filter: Filter): filter is FieldClause {
  return "field" in filter;
}

/**
 * A filter as it reads, for a failure message: leaves as `field op operand` joined by `and`,
 * combinators bracketed. Truncated to FILTER_LIMITS.maxClauseLength.
 */
export function renderFilter(filter: Filter): string {
  return truncate(render(filter), FILTER_LIMITS.maxClauseLength);
}

function render(filter: Filter): string {
  if (isLeaf(filter)) {
    const field = renderField(filter.field);
    return OPERATORS.filter((name) => filter[name] !== undefined)
      .map((name) => renderOperator(field, name, filter[name]))
      .join(" and ");
  }
  if ("not" in filter) return `not (${render(filter.not)})`;
  const [word, clauses] = "all" in filter ? ["and", filter.all] : ["or", filter.any];
  return `(${clauses.map(render).join(` ${word} `)})`;
}

/**
 * Whether a delivery matches `filter`; when not, the clause that failed and the value it saw.
 * `all` reports its first failing clause; `any` reports every branch's failure joined by `or`
 * and the last branch's value; `not` reports the negated clause and, for a leaf, the value that
 * made it hold.
 *
 * @example
 * evaluateFilter({ field: "body.amount", gte: 100 }, input) // { match: false, clause: "body.amount gte 100", saw: "42" }
 */
export function evaluateFilter(filter: Filter, input: FilterInput): FilterVerdict {
  const verdict = evaluate(filter, input);
  return verdict.match ? verdict : { match: false, clause: truncate(verdict.clause, FILTER_LIMITS.maxClauseLength), saw: verdict.saw };
}

function evaluate(filter: Filter, input: FilterInput): typeof MATCH | Failure {
  if (isLeaf(filter)) return evaluateLeaf(filter, input);
  if ("not" in filter) {
    if (!evaluate(filter.not, input).match) return MATCH;
    const inner = filter.not;
    const saw = isLeaf(inner) ? valueOf(inner, input) : undefined;
    return { match: false, clause: `not (${render(inner)})`, saw: sawText(saw) };
  }
  if ("all" in filter) {
    for (const clause of filter.all) {
      const verdict = evaluate(clause, input);
      if (!verdict.match) return verdict;
    }
    return MATCH;
  }
  const failures: Failure[] = [];
  for (const clause of filter.any) {
    const verdict = evaluate(clause, input);
    if (verdict.match) return MATCH;
    failures.push(verdict);
  }
  // parseFilter refuses an empty `any`; one declared in code matches nothing.
  const last = failures[failures.length - 1] ?? { match: false, clause: "any []", saw: null };
  return { match: false, clause: failures.length <= 1 ? last.clause : `(${failures.map((failure) => failure.clause).join(" or ")})`, saw: last.saw };
}

/** The value a leaf's field holds in `input` (undefined when absent or the field is malformed). */
function valueOf(clause: FieldClause, input: FilterInput): unknown {
  const field = resolveField(clause.field);
  return field.ok ? readField(field.field, input) : undefined;
}

function evaluateLeaf(clause: FieldClause, input: FilterInput): typeof MATCH | Failure {
  const resolved = resolveField(clause.field);
  const field = renderField(clause.field);
  // A filter declared in code skips parseFilter; a field it cannot resolve matches nothing.
  if (!resolved.ok) return { match: false, clause: `${field} (${resolved.problem})`, saw: null };
  const value = readField(resolved.field, input);
  for (const name of OPERATORS) {
    const operand = clause[name];
    if (operand === undefined) continue;
    if (!holds(name, operand, value)) return { match: false, clause: renderOperator(field, name, operand), saw: sawText(value) };
  }
  return MATCH;
}
