/**
 * What a verification asks of a key's permissions: one permission, or `{and: [...]}` / `{or: [...]}`
 * of queries, nested. Matching is exact: a key's permission strings are its customer's own.
 */
import * as Schema from "effect/Schema"
import { boundedString } from "./Validation.js"

export type PermissionQuery =
  | string
  | { readonly and: ReadonlyArray<PermissionQuery> }
  | { readonly or: ReadonlyArray<PermissionQuery> }

/** Deepest nesting and most permissions one query may hold. */
export const MAX_DEPTH = 8
export const MAX_TERMS = 100

const depthAndTerms = (query: PermissionQuery): { readonly depth: number; readonly terms: number } => {
  if (typeof query === "string") return { depth: 0, terms: 1 }
  const parts = "and" in query ? query.and : query.or
  let depth = 0
  let terms = 0
  for (const part of parts) {
    const inner = depthAndTerms(part)
    depth = Math.max(depth, inner.depth)
    terms += inner.terms
  }
  return { depth: depth + 1, terms }
}

/** Longest permission. */
export const MAX_PERMISSION_LENGTH = 512

const Permission = boundedString("a permission", 1, MAX_PERMISSION_LENGTH)

const Node: Schema.Schema<PermissionQuery> = Schema.Union(
  Permission,
  Schema.Struct({ and: Schema.Array(Schema.suspend(() => Node)).pipe(Schema.minItems(1)) }),
  Schema.Struct({ or: Schema.Array(Schema.suspend(() => Node)).pipe(Schema.minItems(1)) })
).annotations({
  identifier: "PermissionQuery",
  description: "A permission, or {\"and\": [...]} or {\"or\": [...]} of permission queries.",
  message: () => "must be a permission, or {\"and\": [...]} or {\"or\": [...]} of them"
})

/** A permission query, bounded in depth and size. */
export const PermissionQuery = Node.pipe(
  Schema.filter((query) => {
    const { depth, terms } = depthAndTerms(query)
    return depth > MAX_DEPTH
      ? `must nest at most ${MAX_DEPTH} levels`
      : terms > MAX_TERMS
      ? `must hold at most ${MAX_TERMS} permissions`
      : true
  })
).annotations({
  // Generated queries (property tests) stay small: the recursive schema alone grows without bound.
  arbitrary: () => (fc) =>
    fc.letrec<{ query: PermissionQuery }>((tie) => ({
      query: fc.oneof(
        { maxDepth: 3, depthIdentifier: "PermissionQuery" },
        fc.string({ minLength: 1, maxLength: 16 }),
        fc.record({ and: fc.array(tie("query"), { minLength: 1, maxLength: 3 }) }),
        fc.record({ or: fc.array(tie("query"), { minLength: 1, maxLength: 3 }) })
      )
    })).query
})

/** True when `permissions` satisfy `query`. */
export const satisfies = (permissions: ReadonlyArray<string>, query: PermissionQuery): boolean =>
  typeof query === "string"
    ? permissions.includes(query)
    : "and" in query
    ? query.and.every((part) => satisfies(permissions, part))
    : query.or.some((part) => satisfies(permissions, part))

/**
 * A query written as text (Unkey v2's): permissions joined by `AND` and `OR` (either case; AND
 * binds tighter), grouped with parentheses, e.g. `(documents.read OR documents.write) AND
 * users.view`. A permission is any run of characters other than whitespace and parentheses. The
 * query, or why it is not one.
 */
export const parse = (text: string): { readonly query: PermissionQuery } | { readonly error: string } => {
  const tokens = text.match(/\(|\)|[^\s()]+/g) ?? []
  let at = 0
  let failure: string | undefined
  const fail = (message: string): PermissionQuery => {
    failure ??= message
    return ""
  }
  const isOperator = (token: string | undefined, operator: string) => token?.toUpperCase() === operator
  const joined = (operator: "AND" | "OR", next: () => PermissionQuery): PermissionQuery => {
    const parts = [next()]
    while (failure === undefined && isOperator(tokens[at], operator)) {
      at++
      parts.push(next())
    }
    return parts.length === 1 ? parts[0]! : operator === "AND" ? { and: parts } : { or: parts }
  }
  const primary = (): PermissionQuery => {
    const token = tokens[at]
    if (token === undefined) return fail("ends where a permission or ( was expected")
    if (token === "(") {
      at++
      const inner = joined("OR", () => joined("AND", primary))
      if (tokens[at] !== ")") return fail(`misses a ) to close the ( of part ${at}`)
      at++
      return inner
    }
    if (token === ")" || isOperator(token, "AND") || isOperator(token, "OR")) {
      return fail(`has ${JSON.stringify(token)} where a permission was expected`)
    }
    at++
    return token
  }
  if (tokens.length === 0) return { error: "must hold a permission, or permissions joined by AND and OR" }
  const query = joined("OR", () => joined("AND", primary))
  if (failure === undefined && at < tokens.length) {
    failure = `has ${JSON.stringify(tokens[at])} where AND, OR or the end was expected`
  }
  return failure === undefined ? { query } : { error: failure }
}
