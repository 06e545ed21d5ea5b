/**
 * The shape of a declarative filter (docs/filters.md): JSON that a var can hold and code can
 * declare. A leaf names a field and tests it with one or more operators (all must hold);
 * `all`, `any` and `not` combine leaves.
 */

/** A JSON scalar: what `equals` and `oneOf` compare with. */
export type Scalar = string | number | boolean | null;

/**
 * Where a leaf looks: `"type"` (the event type), `"headers.<name>"` (a request header, any case)
 * or `"body.<path>"` (a dotted path into the JSON body; a digit segment indexes an array). A key
 * that contains a dot is written in the array form, one segment per element:
 * `["body", "metadata", "a.b"]`.
 */
export type FieldPath = string | readonly (string | number)[];

/** A leaf: a field and the operators it must satisfy (every one given). */
export interface FieldClause {
  readonly field: FieldPath;
  readonly equals?: Scalar;
  readonly oneOf?: readonly Scalar[];
  readonly exists?: boolean;
  readonly prefix?: string;
  readonly gt?: number;
  readonly gte?: number;
  readonly lt?: number;
  readonly lte?: number;
}

/** A declarative filter. */
export type Filter =
  | { readonly all: readonly Filter[] }
  | { readonly any: readonly Filter[] }
  | { readonly not: Filter }
  | FieldClause;

/** What a filter is evaluated against: one delivery's event type, headers and parsed body. */
export interface FilterInput {
  /** The event type the provider named, or null when it names none. */
  readonly eventType: string | null;
  /** A request header's value by case-insensitive name, or null when absent. */
  header(name: string): string | null;
  /** The parsed JSON body, or undefined when the body is not JSON. */
  readonly body: unknown;
}

/** A filter's verdict: a match, or the clause that failed and the value it saw (JSON, truncated). */
export type FilterVerdict = { readonly match: true } | { readonly match: false; readonly clause: string; readonly saw: string | null };

/** The operators of a leaf, in the order they are checked and rendered. */
export const OPERATORS = ["exists", "equals", "oneOf", "prefix", "gt", "gte", "lt", "lte"] as const;
export type Operator = (typeof OPERATORS)[number];

/** Bounds that keep a filter cheap to evaluate whatever a var holds. */
export const FILTER_LIMITS = {
  /** Nesting of all/any/not. */
  maxDepth: 8,
  /** Nodes in the whole filter (leaves and combinators). */
  maxClauses: 64,
  /** Entries of one `oneOf`. */
  maxOneOf: 100,
  /** Characters of any string: a field, a segment, an operand. */
  maxStringLength: 256,
  /** Segments of one field path. */
  maxPathSegments: 32,
  /** Characters of the `saw` value reported for a failed clause. */
  maxSawLength: 200,
  /** Characters of the clause rendering reported for a failed clause. */
  maxClauseLength: 500,
} as const;
