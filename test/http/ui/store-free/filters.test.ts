/** The list's query parsing and the body's pretty-printer: pure functions, their edge cases. */
import { describe, expect, it } from "vitest";
import { MAX_PRETTY_DEPTH, prettyJson, viewBody, MAX_SHOWN_BYTES } from "../../../../src/http/ui/body-view";
import { parseFilter, parseUtcTime } from "../../../../src/http/ui/filters";

describe("parseUtcTime", () => {
  it.each([
    ["2026-03-01", "2026-03-01T00:00:00.000Z"],
    ["2026-03-01T07:05", "2026-03-01T07:05:00.000Z"],
    ["2026-03-01 07:05:09", "2026-03-01T07:05:09.000Z"],
    ["2026-03-01T07:05:09.5Z", "2026-03-01T07:05:09.500Z"],
    ["2026-03-01T07:05:09.123Z", "2026-03-01T07:05:09.123Z"],
    ["2028-02-29T23:59", "2028-02-29T23:59:00.000Z"],
    [" 2026-03-01T07:05 UTC ", "2026-03-01T07:05:00.000Z"],
  ])("reads %j as %s", (text, iso) => {
    expect(parseUtcTime(text)).toBe(iso);
  });

  it.each(["yesterday", "2026-02-31", "2027-02-29", "2026-13-01", "2026-03-01T24:00", "2026-03-01T07:60", "2026-03-01T07:05+02:00", "0099-01-01", "1772348400000"])(
    "refuses %j",
    (text) => {
      expect(parseUtcTime(text)).toBeNull();
    },
  );
});

describe("parseFilter", () => {
  it("reads every filter, and leaves out empty ones", () => {
    const parsed = parseFilter(new URLSearchParams("status=failed&source=stripe&eventType=+invoice.paid+&since=2026-03-01&until=&cursor="));
    expect(parsed).toEqual({
      filter: { status: "failed", source: "stripe", eventType: "invoice.paid", since: "2026-03-01T00:00:00.000Z", until: undefined },
      after: undefined,
      cursor: undefined,
      id: undefined,
      problems: [],
    });
  });

  it("names each bad value and drops it", () => {
    const parsed = parseFilter(new URLSearchParams({ status: "lost", source: "s".repeat(300), id: "i".repeat(256) }));
    expect(parsed.filter).toEqual({ status: undefined, source: undefined, eventType: undefined, since: undefined, until: undefined });
    expect(parsed.id).toBeUndefined();
    expect(parsed.problems).toHaveLength(3);
  });
});

describe("prettyJson", () => {
  it("leaves deep nesting as sent, so that a small body cannot make a huge page", () => {
    const deep = `${"[".repeat(20_000)}1${"]".repeat(20_000)}`;
    expect(prettyJson(deep)).toBeNull();
    expect(viewBody(new TextEncoder().encode(deep))).toMatchObject({ kind: "text", text: deep });
    const shallow = `${"[".repeat(MAX_PRETTY_DEPTH)}1${"]".repeat(MAX_PRETTY_DEPTH)}`;
    expect(prettyJson(shallow)?.length).toBeLessThan(40_000);
  });

  it("re-indents without changing a token: large numbers, escapes, duplicate keys", () => {
    expect(prettyJson('{"a":1e400,"a":"x\\"y,{}","b":[ ]}')).toBe('{\n  "a": 1e400,\n  "a": "x\\"y,{}",\n  "b": []\n}');
  });

  it("leaves a scalar or invalid JSON to be shown as text", () => {
    expect(prettyJson('"just a string"')).toBeNull();
    expect(prettyJson("{not json}")).toBeNull();
  });
});

describe("viewBody", () => {
  it("does not put a body larger than it shows into the page", () => {
    expect(viewBody(new Uint8Array(MAX_SHOWN_BYTES + 1))).toEqual({ kind: "too_large", bytes: MAX_SHOWN_BYTES + 1 });
  });
});
