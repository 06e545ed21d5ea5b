/**
 * WHERE terms whose placeholders are numbered only when a statement is put together, so that one
 * filter can serve a query with a cursor and one without. Both stores' listings use them
 * (d1/listing.ts with `?n`, postgres/listing.ts with `$n`); each writes its own term texts.
 */

/** A WHERE term and its values; `sql` gets the number of its first placeholder. */
export interface Term {
  readonly sql: (firstParam: number) => string;
  readonly values: readonly unknown[];
}

/** A term with no value: its text as it is. */
export function fixedTerm(text: string): Term {
  return { sql: () => text, values: [] };
}

/** A term with one value, whose placeholder `text` writes from the number it is given. */
export function boundTerm(text: (n: number) => string, value: unknown): Term {
  return { sql: text, values: [value] };
}

/**
 * Terms numbered from `first`, in order, and their parameters.
 * @example
 * numbered([{ sql: (n) => `received_at >= $${n}`, values: [since] }]); // { terms: ["received_at >= $1"], params: [since] }
 */
export function numbered(terms: readonly Term[], first = 1): { terms: string[]; params: unknown[] } {
  const params: unknown[] = [];
  const texts = terms.map((term) => {
    const text = term.sql(first + params.length);
    params.push(...term.values);
    return text;
  });
  return { terms: texts, params };
}
