// Evaluating filters: every operator, type mismatches, absent fields, headers in any case,
// non-JSON bodies, nesting, and what a failure reports. Pure: no store, no request.
import { describe, expect, it } from "vitest";
import { evaluateFilter, parseFilter, type Filter, type FilterInput } from "../../src/filters";

// JSON text, not an object literal: a literal's "__proto__" key would set the prototype.
const BODY_TEXT = JSON.stringify({
  type: "invoice.paid",
  data: { object: { amount: 2500, currency: "eur", livemode: false, note: null, items: [{ id: "it_1" }, { id: "it_2" }] } },
  metadata: { "a.b": "dotted", proto: "own" },
  count: "100",
}).replace('"proto"', '"__proto__"');

/** A delivery's input: event type, headers (any case) and body. */
function input(overrides: Partial<{ eventType: string | null; headers: Record<string, string>; body: unknown }> = {}): FilterInput {
  const headers = new Headers(overrides.headers ?? { "X-Shop-Topic": "orders/create", "Content-Type": "application/json" });
  return {
    eventType: "eventType" in overrides ? (overrides.eventType ?? null) : "invoice.paid",
    header: (name) => headers.get(name),
    body: "body" in overrides ? overrides.body : JSON.parse(BODY_TEXT),
  };
}

/** A filter as a var would hold it: through parseFilter, so every case is also a valid filter. */
function parsed(filter: unknown): Filter {
  const result = parseFilter(filter);
  if (!result.ok) throw new Error(result.problem);
  return result.filter;
}

describe("evaluateFilter: one operator at a time", () => {
  const cases: [string, unknown, boolean][] = [
    ["type equals", { field: "type", equals: "invoice.paid" }, true],
    ["type equals another", { field: "type", equals: "invoice.created" }, false],
    ["type oneOf", { field: "type", oneOf: ["invoice.paid", "invoice.payment_failed"] }, true],
    ["type oneOf without it", { field: "type", oneOf: ["invoice.created"] }, false],
    ["type prefix", { field: "type", prefix: "invoice." }, true],
    ["type prefix mismatch", { field: "type", prefix: "charge." }, false],
    ["type exists", { field: "type", exists: true }, true],
    ["body number equals", { field: "body.data.object.amount", equals: 2500 }, true],
    ["body boolean equals", { field: "body.data.object.livemode", equals: false }, true],
    ["body null equals null", { field: "body.data.object.note", equals: null }, true],
    ["body null exists", { field: "body.data.object.note", exists: true }, true],
    ["body absent exists false", { field: "body.data.object.missing", exists: false }, true],
    ["body present exists false", { field: "body.data.object.amount", exists: false }, false],
    ["body absent exists true", { field: "body.data.object.missing", exists: true }, false],
    ["gt", { field: "body.data.object.amount", gt: 2499 }, true],
    ["gt at the bound", { field: "body.data.object.amount", gt: 2500 }, false],
    ["gte at the bound", { field: "body.data.object.amount", gte: 2500 }, true],
    ["gte above", { field: "body.data.object.amount", gte: 2501 }, false],
    ["lt", { field: "body.data.object.amount", lt: 2501 }, true],
    ["lt at the bound", { field: "body.data.object.amount", lt: 2500 }, false],
    ["lte at the bound", { field: "body.data.object.amount", lte: 2500 }, true],
    ["lte below", { field: "body.data.object.amount", lte: 2499 }, false],
    ["a range: several operators all hold", { field: "body.data.object.amount", gte: 100, lt: 10000 }, true],
    ["a range: one fails", { field: "body.data.object.amount", gte: 100, lt: 1000 }, false],
    ["array index", { field: "body.data.object.items.1.id", equals: "it_2" }, true],
    ["array index out of range", { field: "body.data.object.items.5.id", exists: true }, false],
    ["non-index segment on an array", { field: "body.data.object.items.first", exists: true }, false],
    ["leading-zero index is not an index", { field: "body.data.object.items.01.id", exists: true }, false],
    ["dotted key in the array form", { field: ["body", "metadata", "a.b"], equals: "dotted" }, true],
    ["the dotted string form splits the key", { field: "body.metadata.a.b", exists: true }, false],
    ["an own __proto__ key is read", { field: "body.metadata.__proto__", equals: "own" }, true],
    ["the prototype is not reached", { field: "body.data.constructor", exists: true }, false],
    ["array form with a number index", { field: ["body", "data", "object", "items", 0, "id"], equals: "it_1" }, true],
    ["whole body exists", { field: "body", exists: true }, true],
  ];
  it.each(cases)("%s", (_, filter, match) => {
    expect(evaluateFilter(parsed(filter), input()).match).toBe(match);
  });
});

describe("evaluateFilter: type mismatches are no match, not errors", () => {
  const cases: [string, unknown][] = [
    ["numeric compare on a numeric string", { field: "body.count", gte: 1 }],
    ["numeric compare on a string", { field: "body.data.object.currency", lt: 5 }],
    ["numeric compare on null", { field: "body.data.object.note", gt: -1 }],
    ["numeric compare on an object", { field: "body.data", gt: 0 }],
    ["prefix on a number", { field: "body.data.object.amount", prefix: "25" }],
    ["equals a number with a string", { field: "body.data.object.amount", equals: "2500" }],
    ["equals a string with a number", { field: "body.count", equals: 100 }],
    ["equals on an object", { field: "body.data", equals: "x" }],
    ["oneOf with other types", { field: "body.data.object.amount", oneOf: ["2500", true] }],
    ["equals null on an absent field", { field: "body.nothing", equals: null }],
    ["path through a scalar", { field: "body.data.object.amount.cents", exists: true }],
  ];
  it.each(cases)("%s", (_, filter) => {
    expect(evaluateFilter(parsed(filter), input()).match).toBe(false);
  });
});

describe("evaluateFilter: headers", () => {
  it("reads a header whatever the case of its name in the filter or the request", () => {
    for (const field of ["headers.x-shop-topic", "headers.X-Shop-Topic", "headers.X-SHOP-TOPIC"]) {
      expect(evaluateFilter(parsed({ field, equals: "orders/create" }), input()).match, field).toBe(true);
    }
  });

  it("treats a header as text: prefix holds, a numeric compare does not", () => {
    expect(evaluateFilter(parsed({ field: "headers.x-shop-topic", prefix: "orders/" }), input()).match).toBe(true);
    const numeric = input({ headers: { "x-count": "7" } });
    expect(evaluateFilter(parsed({ field: "headers.x-count", gt: 1 }), numeric).match).toBe(false);
    expect(evaluateFilter(parsed({ field: "headers.x-count", equals: "7" }), numeric).match).toBe(true);
  });

  it("reports an absent header as absent", () => {
    expect(evaluateFilter(parsed({ field: "headers.x-missing", exists: false }), input()).match).toBe(true);
    expect(evaluateFilter(parsed({ field: "headers.x-missing", equals: "a" }), input())).toEqual({ match: false, clause: 'headers.x-missing equals "a"', saw: null });
  });
});

describe("evaluateFilter: bodies that are not JSON, and no event type", () => {
  it("finds no body field when the body is not JSON, while type and headers still work", () => {
    const notJson = input({ body: undefined });
    expect(evaluateFilter(parsed({ field: "body.data", exists: true }), notJson)).toEqual({ match: false, clause: "body.data exists true", saw: null });
    expect(evaluateFilter(parsed({ field: "body", exists: false }), notJson).match).toBe(true);
    expect(evaluateFilter(parsed({ field: "type", equals: "invoice.paid" }), notJson).match).toBe(true);
  });

  it("reads into a JSON array or scalar body", () => {
    expect(evaluateFilter(parsed({ field: "body.0.id", equals: 1 }), input({ body: [{ id: 1 }] })).match).toBe(true);
    expect(evaluateFilter(parsed({ field: "body", equals: "plain" }), input({ body: "plain" })).match).toBe(true);
  });

  it("treats a missing event type as absent", () => {
    const untyped = input({ eventType: null });
    expect(evaluateFilter(parsed({ field: "type", exists: false }), untyped).match).toBe(true);
    expect(evaluateFilter(parsed({ field: "type", prefix: "" }), untyped)).toEqual({ match: false, clause: 'type prefix ""', saw: null });
  });
});

describe("evaluateFilter: all, any, not and nesting", () => {
  const OVER_100_EUR_INVOICES = {
    all: [
      { field: "type", oneOf: ["invoice.paid", "invoice.payment_failed"] },
      { field: "body.data.object.currency", equals: "eur" },
      { field: "body.data.object.amount", gt: 10000 },
    ],
  };

  it("all: matches when every clause does, else reports the first that failed and its value", () => {
    expect(evaluateFilter(parsed(OVER_100_EUR_INVOICES), input())).toEqual({ match: false, clause: "body.data.object.amount gt 10000", saw: "2500" });
    const big = input({ body: { data: { object: { amount: 20000, currency: "eur" } } } });
    expect(evaluateFilter(parsed(OVER_100_EUR_INVOICES), big)).toEqual({ match: true });
    expect(evaluateFilter(parsed(OVER_100_EUR_INVOICES), input({ eventType: "customer.created" }))).toEqual({
      match: false,
      clause: 'type oneOf ["invoice.paid","invoice.payment_failed"]',
      saw: '"customer.created"',
    });
  });

  it("any: matches when one clause does, else reports every branch and the last value", () => {
    const filter = parsed({ any: [{ field: "type", equals: "charge.failed" }, { field: "body.data.object.amount", lt: 100 }] });
    expect(evaluateFilter(filter, input())).toEqual({ match: false, clause: '(type equals "charge.failed" or body.data.object.amount lt 100)', saw: "2500" });
    expect(evaluateFilter(filter, input({ eventType: "charge.failed" })).match).toBe(true);
  });

  it("not: inverts, and reports the negated clause with the value that made it hold", () => {
    const filter = parsed({ not: { field: "type", prefix: "invoice." } });
    expect(evaluateFilter(filter, input())).toEqual({ match: false, clause: 'not (type prefix "invoice.")', saw: '"invoice.paid"' });
    expect(evaluateFilter(filter, input({ eventType: "charge.succeeded" })).match).toBe(true);
    const nested = parsed({ not: { all: [{ field: "type", exists: true }, { field: "body.data.object.livemode", equals: false }] } });
    expect(evaluateFilter(nested, input())).toEqual({ match: false, clause: "not ((type exists true and body.data.object.livemode equals false))", saw: null });
  });

  it("nests several levels", () => {
    const filter = parsed({
      all: [
        { any: [{ field: "type", equals: "x" }, { not: { field: "headers.x-shop-topic", exists: false } }] },
        { not: { any: [{ field: "body.data.object.livemode", equals: true }, { field: "body.data.object.amount", lt: 0 }] } },
      ],
    });
    expect(evaluateFilter(filter, input()).match).toBe(true);
    expect(evaluateFilter(filter, input({ headers: {} }))).toEqual({
      match: false,
      clause: '(type equals "x" or not (headers.x-shop-topic exists false))',
      saw: null,
    });
  });

  it("renders a dotted key in brackets in the failed clause", () => {
    expect(evaluateFilter(parsed({ field: ["body", "metadata", "a.b"], equals: "other" }), input())).toEqual({
      match: false,
      clause: 'body.metadata["a.b"] equals "other"',
      saw: '"dotted"',
    });
  });

  it("truncates a large value it saw", () => {
    const verdict = evaluateFilter(parsed({ field: "body.big", equals: "x" }), input({ body: { big: "y".repeat(10_000) } }));
    expect(verdict.match).toBe(false);
    if (verdict.match) return;
    expect(verdict.saw?.length).toBe(200);
    expect(verdict.saw?.startsWith('"yyy')).toBe(true);
    expect(verdict.saw?.endsWith("…")).toBe(true);
  });

  it("reports an object it saw as JSON", () => {
    expect(evaluateFilter(parsed({ field: "body.data.object.items.0", equals: "x" }), input())).toEqual({ match: false, clause: 'body.data.object.items.0 equals "x"', saw: '{"id":"it_1"}' });
  });
});
