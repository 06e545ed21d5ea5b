// docs/providers.md's table says, for every source, what its provider's grade and dedup key say:
// the docs cannot drift from the declarations.
import { describe, expect, it } from "vitest";
import doc from "../../../../docs/providers.md?raw";
import { SOURCES } from "../../../../src/sources";

const rows = new Map(
  doc
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .map((line) => {
      const cells = line.split(" | ").map((cell) => cell.replace(/^\| /, "").trim());
      return [cells[0]!.replaceAll("`", ""), cells] as const;
    }),
);
const mark = (value: boolean | "partly") => (value === true ? "yes" : value === "partly" ? "partly" : "no");

describe("docs/providers.md", () => {
  it("has a row for every source, and at least 40", () => {
    expect([...rows.keys()].sort()).toEqual(Object.keys(SOURCES).sort());
    expect(rows.size).toBeGreaterThanOrEqual(40);
  });

  it.each(Object.entries(SOURCES))("gives %s's grade and dedup key as its provider does", (name, provider) => {
    const cells = rows.get(name)!;
    const grade = provider.grade!;
    expect(cells.slice(5, 9)).toEqual([mark(grade.bodySigned), mark(grade.timestampSigned), mark(grade.deliveryIdSigned), mark(grade.secretInClear)]);
    expect(cells[3]).toBe(provider.dedupKey);
  });
});
