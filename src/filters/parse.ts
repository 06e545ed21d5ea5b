/**
 * Checking a filter given as JSON (a var) or declared in code: every key known, every operand of
 * the right type, and the whole bounded (FILTER_LIMITS) so that no var can make evaluation
 * expensive. A problem names the path of the bad clause (`filter.all[1].not`).
 */
import { resolveField } from "./field";
import { FILTER_LIMITS, OPERATORS, type FieldClause, type Filter, type Scalar } from "./types";

export type ParseResult = { ok: true; filter: Filter } | { ok: false; problem: string };

const COMBINATORS = ["all", "any", "not"] as const;
const NUMERIC = new Set(["gt", "gte", "lt", "lte"]);

/** A problem at `path`, thrown inside the walk and caught once by parseFilter. */
class FilterProblem extends Error {}

function fail(path: string, problem: string): never {
  throw new FilterProblem(`${path}: ${problem}`);
}

function isScalar(value: unknown): value is Scalar {
  return value === null || typeof value === "boolean" || typeof value === "string" || (typeof value === "number" && Number.isFinite(value));
}

function checkString(path: string, value: string): void {
  if (value.length > FILTER_LIMITS.maxStringLength) fail(path, `longer than ${FILTER_LIMITS.maxStringLength} characters`);
}

function checkScalar(path: string, value: unknown): Scalar {
  if (!isScalar(value)) fail(path, "must be a string, a finite number, true, false or null");
  if (typeof value === "string") checkString(path, value);
  return value;
}

/**
 * A filter checked and copied (the copy holds only known keys, so a caller's later change to its
 * object cannot change it), or the first problem found.
 *
 * @example
 * parseFilter(JSON.parse(env.STRIPE_FILTER)) // { ok: true, filter } or { ok: false, problem: "filter.all[0]: ..." }
 */
export function parseFilter(value: unknown): ParseResult {
  const budget = { clauses: 0 };
  try {
    return { ok: true, filter: walk(value, "filter", 1, budget) };
  } catch (error) {
    if (error instanceof FilterProblem) return { ok: false, problem: error.message };
    throw error;
  }
}

function walk(value: unknown, path: string, depth: number, budget: { clauses: number }): Filter {
  if (depth > FILTER_LIMITS.maxDepth) fail(path, `nested deeper than ${FILTER_LIMITS.maxDepth} levels`);
  budget.clauses += 1;
  if (budget.clauses > FILTER_LIMITS.maxClauses) fail(path, `the filter has more than ${FILTER_LIMITS.maxClauses} clauses`);
  if (value === null || typeof value !== "object" || Array.isArray(value)) fail(path, 'must be an object: {"field": ...}, {"all": [...]}, {"any": [...]} or {"not": {...}}');
  const keys = Object.keys(value);
  const combinator = COMBINATORS.find((name) => keys.includes(name));
  if (combinator === undefined) return leaf(value as Record<string, unknown>, keys, path);
  if (keys.length !== 1) fail(path, `"${combinator}" must be the clause's only key (found ${keys.map((key) => JSON.stringify(key)).join(", ")})`);
  const inner = (value as Record<string, unknown>)[combinator];
  if (combinator === "not") return { not: walk(inner, `${path}.not`, depth + 1, budget) };
  if (!Array.isArray(inner) || inner.length === 0) fail(`${path}.${combinator}`, "must be a non-empty array of clauses");
  const clauses = inner.map((clause, index) => walk(clause, `${path}.${combinator}[${index}]`, depth + 1, budget));
  return combinator === "all" ? { all: clauses } : { any: clauses };
}

function leaf(value: Record<string, unknown>, keys: string[], path: string): FieldClause {
  const unknown = keys.find((key) => key !== "field" && !(OPERATORS as readonly string[]).includes(key));
  if (unknown !== undefined) fail(path, `unknown key ${JSON.stringify(unknown.slice(0, 40))} (a clause has "field" and operators: ${OPERATORS.join(", ")}; or is all, any, not)`);
  if (!("field" in value)) fail(path, 'a clause needs "field" ("type", "headers.<name>" or "body.<path>")');
  const field = resolveField(value.field);
  if (!field.ok) fail(`${path}.field`, field.problem);
  const clause: Record<string, unknown> = { field: Array.isArray(value.field) ? [...(value.field as unknown[])] : value.field };
  let operators = 0;
  for (const name of OPERATORS) {
    if (!(name in value)) continue;
    operators += 1;
    const operand = value[name];
    const at = `${path}.${name}`;
    if (name === "exists") {
      if (typeof operand !== "boolean") fail(at, "must be true or false");
      clause.exists = operand;
    } else if (name === "equals") {
      clause.equals = checkScalar(at, operand);
    } else if (name === "oneOf") {
      if (!Array.isArray(operand) || operand.length === 0) fail(at, "must be a non-empty array");
      if (operand.length > FILTER_LIMITS.maxOneOf) fail(at, `has more than ${FILTER_LIMITS.maxOneOf} entries`);
      clause.oneOf = operand.map((entry, index) => checkScalar(`${at}[${index}]`, entry));
    } else if (name === "prefix") {
      if (typeof operand !== "string") fail(at, "must be a string");
      checkString(at, operand);
      clause.prefix = operand;
    } else if (NUMERIC.has(name)) {
      if (typeof operand !== "number" || !Number.isFinite(operand)) fail(at, "must be a finite number");
      clause[name] = operand;
    }
  }
  if (operators === 0) fail(path, `a clause needs at least one operator: ${OPERATORS.join(", ")}`);
  return clause as unknown as FieldClause;
}
