/**
 * A portable SQL statement: what a handler writes for its effects, whichever store runs.
 *
 * `sql` is a tagged template whose interpolated values become bound parameters, never SQL text:
 * the store renders the placeholders its database speaks (`?1` for D1, `$1` for Postgres) and binds
 * the values in order. The text between them is the handler's own, so it must be SQL both
 * databases accept when the handler is to run on both (`INSERT … ON CONFLICT DO NOTHING`, not
 * SQLite's `INSERT OR IGNORE`).
 *
 * Below both the store and processing, like delivery-ref.ts: processing hands these to the store.
 * @example
 * sql`INSERT INTO payments (delivery_id, amount) VALUES (${ctx.deliveryId}, ${amount}) ON CONFLICT DO NOTHING`
 */

/** What a parameter may be: the types both databases bind alike. */
export type SqlValue = string | number | bigint | boolean | null | Uint8Array;

export class SqlStatement {
  /** The template's text around the values (one more than `values`). */
  readonly strings: readonly string[];
  readonly values: readonly SqlValue[];

  constructor(strings: readonly string[], values: readonly SqlValue[]) {
    if (strings.length !== values.length + 1) throw new TypeError("sql: a statement needs one more text part than values");
    this.strings = strings;
    this.values = values;
  }

  /** The statement's text with each value's place written by `placeholder` (1-based). */
  render(placeholder: (position: number) => string): string {
    let text = this.strings[0]!;
    for (let index = 1; index < this.strings.length; index++) text += placeholder(index) + this.strings[index];
    return text;
  }
}

/**
 * Builds a statement from a template: each `${value}` becomes a bound parameter.
 * `undefined` is refused (a missing field is a bug to see, not a NULL to store silently).
 */
export function sql(strings: TemplateStringsArray, ...values: SqlValue[]): SqlStatement {
  values.forEach((value, index) => {
    if (value === undefined) throw new TypeError(`sql: value ${index + 1} is undefined; pass null for NULL`);
  });
  return new SqlStatement([...strings], values);
}

/**
 * A handler's effect: a portable statement (`sql`), or with D1 a prepared statement of its own
 * (`env.DB.prepare(…)`), which the Postgres store refuses.
 */
export type Effect = SqlStatement | D1PreparedStatement;
