import { describe, expect, it } from "vitest";
import { sql, SqlStatement } from "../src/sql";

describe("sql", () => {
  it("keeps every interpolated value out of the text, as a numbered placeholder", () => {
    const name = "Robert'); DROP TABLE payments;--";
    const statement = sql`INSERT INTO t (a, b) VALUES (${name}, ${42})`;
    expect(statement.render((n) => `?${n}`)).toBe("INSERT INTO t (a, b) VALUES (?1, ?2)");
    expect(statement.render((n) => `$${n}`)).toBe("INSERT INTO t (a, b) VALUES ($1, $2)");
    expect(statement.values).toEqual([name, 42]);
  });

  it("renders a statement without values as its text", () => {
    expect(sql`DELETE FROM t`.render((n) => `$${n}`)).toBe("DELETE FROM t");
  });

  it("refuses undefined, so that a missing field is not stored as NULL unseen", () => {
    const event: { amount?: number } = {};
    expect(() => sql`INSERT INTO t (amount) VALUES (${event.amount as never})`).toThrow(/value 1 is undefined/);
  });

  it("refuses text parts that do not surround the values", () => {
    expect(() => new SqlStatement(["a", "b"], [])).toThrow(TypeError);
  });
});
