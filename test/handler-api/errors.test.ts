import { describe, expect, it } from "vitest";
import { describeError } from "../../src/handler-api/errors";
import { PermanentError } from "../../src/handler-api";

describe("describeError", () => {
  it("names the error's class unless it is a plain Error", () => {
    expect(describeError(new Error("boom"))).toBe("boom");
    expect(describeError(new PermanentError("no amount"))).toBe("PermanentError: no amount");
    expect(describeError("a string thrown")).toBe("a string thrown");
  });

  it("cuts a long message at 1,000 characters, never between the halves of a surrogate pair", () => {
    expect(describeError(new Error("x".repeat(1_500)))).toBe(`${"x".repeat(1_000)}…`);
    // An emoji (two UTF-16 units) across the cut: it goes whole, not half of it.
    const cut = describeError(new Error(`${"x".repeat(999)}😀 and more`));
    expect(cut).toBe(`${"x".repeat(999)}…`);
    expect(cut.isWellFormed()).toBe(true);
    // A message of exactly 1,000 units with the emoji last is whole.
    expect(describeError(new Error(`${"x".repeat(998)}😀`))).toBe(`${"x".repeat(998)}😀`);
  });
});
