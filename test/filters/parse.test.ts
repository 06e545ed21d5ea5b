// Checking filters: what is accepted, what is refused with a problem naming the bad clause's
// path, and the bounds that keep evaluation cheap.
import { describe, expect, it } from "vitest";
import { FILTER_LIMITS, parseFilter } from "../../src/filters";

describe("parseFilter: accepts", () => {
  it("every operator and combinator, and returns a copy holding only known keys", () => {
    const value = {
      all: [
        { field: "type", oneOf: ["a", 1, true, null] },
        { any: [{ field: "headers.X-Topic", prefix: "orders/" }, { not: { field: ["body", "a.b", 0], exists: true } }] },
        { field: "body.amount", gt: 1, gte: 1, lt: 2, lte: 2, equals: 1.5 },
      ],
    };
    const result = parseFilter(value);
    expect(result).toEqual({ ok: true, filter: value });
    if (!result.ok) return;
    (value.all[0] as { oneOf: unknown[] }).oneOf.push("later");
    expect(result.filter).not.toEqual(value);
  });

  it("JSON.parse of a var's text", () => {
    expect(parseFilter(JSON.parse('{"field":"type","equals":"invoice.paid"}')).ok).toBe(true);
  });
});

describe("parseFilter: refuses, naming the path", () => {
  const cases: [string, unknown, string][] = [
    ["not an object", "type=invoice.paid", "filter: must be an object"],
    ["an array", [], "filter: must be an object"],
    ["null", null, "filter: must be an object"],
    ["no field", { equals: "x" }, 'filter: a clause needs "field"'],
    ["no operator", { field: "type" }, "filter: a clause needs at least one operator"],
    ["unknown operator", { field: "type", eq: "x" }, 'filter: unknown key "eq"'],
    ["mixed combinator and field", { all: [{ field: "type", exists: true }], field: "type" }, 'filter: "all" must be the clause\'s only key'],
    ["two combinators", { all: [], any: [] }, 'filter: "all" must be the clause\'s only key'],
    ["empty all", { all: [] }, "filter.all: must be a non-empty array"],
    ["any not an array", { any: { field: "type", exists: true } }, "filter.any: must be a non-empty array"],
    ["bad nested clause", { all: [{ field: "type", exists: true }, { any: [{ field: "type", gt: "1" }] }] }, "filter.all[1].any[0].gt: must be a finite number"],
    ["bad not", { not: { field: "type" } }, "filter.not: a clause needs at least one operator"],
    ["field root", { field: "data.amount", exists: true }, 'filter.field: field must start with "type", "headers" or "body"'],
    ["field type with a path", { field: "type.name", exists: true }, 'filter.field: "type" has no sub-fields'],
    ["header without a name", { field: "headers", exists: true }, "filter.field: a header field"],
    ["header with a path", { field: "headers.a.b", exists: true }, "filter.field: a header field"],
    ["header with a bad name", { field: ["headers", "a b"], exists: true }, "filter.field: a header field"],
    ["empty segment", { field: "body..a", exists: true }, 'filter.field: field "body..a" has an empty segment'],
    ["field a number", { field: 3, exists: true }, "filter.field: field must be a string"],
    ["field segment an object", { field: ["body", {}], exists: true }, "filter.field: field segments must be strings or array indices"],
    ["negative index", { field: ["body", -1], exists: true }, "filter.field: field segments"],
    ["exists not boolean", { field: "type", exists: "yes" }, "filter.exists: must be true or false"],
    ["equals an object", { field: "type", equals: { a: 1 } }, "filter.equals: must be a string, a finite number"],
    ["equals NaN", { field: "body.a", equals: Number.NaN }, "filter.equals: must be a string, a finite number"],
    ["oneOf empty", { field: "type", oneOf: [] }, "filter.oneOf: must be a non-empty array"],
    ["oneOf with an array", { field: "type", oneOf: ["a", ["b"]] }, "filter.oneOf[1]: must be a string"],
    ["prefix a number", { field: "type", prefix: 1 }, "filter.prefix: must be a string"],
    ["gte infinite", { field: "body.a", gte: Number.POSITIVE_INFINITY }, "filter.gte: must be a finite number"],
    ["lte a numeric string", { field: "body.a", lte: "5" }, "filter.lte: must be a finite number"],
  ];
  it.each(cases)("%s", (_, value, problem) => {
    const result = parseFilter(value);
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.problem.startsWith(problem), result.problem).toBe(true);
  });
});

describe("parseFilter: bounds", () => {
  /** A filter nested `levels` deep in `not`. */
  function nested(levels: number): unknown {
    let filter: unknown = { field: "type", exists: true };
    for (let level = 1; level < levels; level += 1) filter = { not: filter };
    return filter;
  }

  it("accepts the deepest nesting allowed and refuses one more", () => {
    expect(parseFilter(nested(FILTER_LIMITS.maxDepth)).ok).toBe(true);
    const result = parseFilter(nested(FILTER_LIMITS.maxDepth + 1));
    expect(result).toEqual({ ok: false, problem: expect.stringContaining(`nested deeper than ${FILTER_LIMITS.maxDepth} levels`) });
  });

  it("accepts the most clauses allowed and refuses one more", () => {
    const leaves = (count: number) => ({ any: Array.from({ length: count }, (_, index) => ({ field: "type", equals: `t${index}` })) });
    expect(parseFilter(leaves(FILTER_LIMITS.maxClauses - 1)).ok).toBe(true);
    const result = parseFilter(leaves(FILTER_LIMITS.maxClauses));
    expect(result).toEqual({ ok: false, problem: `filter.any[${FILTER_LIMITS.maxClauses - 1}]: the filter has more than ${FILTER_LIMITS.maxClauses} clauses` });
  });

  it("refuses a oneOf past its bound", () => {
    const oneOf = (count: number) => ({ field: "type", oneOf: Array.from({ length: count }, (_, index) => `t${index}`) });
    expect(parseFilter(oneOf(FILTER_LIMITS.maxOneOf)).ok).toBe(true);
    expect(parseFilter(oneOf(FILTER_LIMITS.maxOneOf + 1))).toEqual({ ok: false, problem: `filter.oneOf: has more than ${FILTER_LIMITS.maxOneOf} entries` });
  });

  it("refuses long strings in operands and fields, and long paths", () => {
    const long = "x".repeat(FILTER_LIMITS.maxStringLength + 1);
    expect(parseFilter({ field: "type", equals: long })).toEqual({ ok: false, problem: `filter.equals: longer than ${FILTER_LIMITS.maxStringLength} characters` });
    expect(parseFilter({ field: "type", prefix: long }).ok).toBe(false);
    expect(parseFilter({ field: "type", oneOf: ["a", long] })).toEqual({ ok: false, problem: `filter.oneOf[1]: longer than ${FILTER_LIMITS.maxStringLength} characters` });
    expect(parseFilter({ field: `body.${long}`, exists: true }).ok).toBe(false);
    const deepPath = ["body", ...Array.from({ length: FILTER_LIMITS.maxPathSegments }, () => "a")];
    expect(parseFilter({ field: deepPath, exists: true })).toEqual({ ok: false, problem: `filter.field: field has more than ${FILTER_LIMITS.maxPathSegments} segments` });
    expect(parseFilter({ field: deepPath.slice(0, -1), exists: true }).ok).toBe(true);
  });

  it("caps the clause rendering it reports", async () => {
    const { evaluateFilter } = await import("../../src/filters");
    const any = { any: Array.from({ length: 40 }, (_, index) => ({ field: "type", equals: `type-${"x".repeat(40)}-${index}` })) };
    const parsed = parseFilter(any);
    if (!parsed.ok) throw new Error(parsed.problem);
    const verdict = evaluateFilter(parsed.filter, { eventType: "other", header: () => null, body: undefined });
    expect(verdict.match).toBe(false);
    if (verdict.match) return;
    expect(verdict.clause.length).toBe(FILTER_LIMITS.maxClauseLength);
  });
});

describe("acceptsFilter", () => {
  it("is a subscriber's accepts: true for a delivery that matches, false otherwise", async () => {
    const { acceptsFilter } = await import("../../src/filters");
    const accepts: import("../../src/handler-api/registry").Accepts = acceptsFilter({ field: "body.amount", gte: 100 });
    expect(accepts({ eventType: null, header: () => null, body: { amount: 150 } })).toBe(true);
    expect(accepts({ eventType: null, header: () => null, body: { amount: 99 } })).toBe(false);
  });

  it("throws where it is declared when the filter is bad, naming the clause", async () => {
    const { acceptsFilter } = await import("../../src/filters");
    expect(() => acceptsFilter({ all: [{ field: "body.amount", gte: "100" }] })).toThrow("invalid filter: filter.all[0].gte: must be a finite number");
  });
});
