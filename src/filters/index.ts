/**
 * Declarative filters (docs/filters.md): pure, at the bottom of the house with config/ and
 * handler-api/, importing no feature. config/ uses parseFilter to check `<SOURCE>_FILTER`; the
 * receiver and the subscribers use evaluateFilter.
 */
export type { FieldClause, FieldPath, Filter, FilterInput, FilterVerdict, Operator, Scalar } from "./types";
export { FILTER_LIMITS, OPERATORS } from "./types";
export { parseFilter, type ParseResult } from "./parse";
export { evaluateFilter, renderFilter } from "./evaluate";
export { renderField } from "./field";
export { acceptsFilter } from "./accepts";
