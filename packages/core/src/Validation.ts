/**
 * Schema decoding with the caller-facing messages of the error envelope: `field: what was
 * expected, got what`, one message per field.
 */
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import { ValidationError } from "./Errors.js"

/** How a value is shown in a message. */
export const describeValue = (value: unknown): string => {
  if (value === undefined) return "nothing"
  if (typeof value === "string") return JSON.stringify(value.length > 40 ? value.slice(0, 40) + "…" : value)
  if (Array.isArray(value)) return "an array"
  if (value === null) return "null"
  if (typeof value === "object") return "an object"
  return String(value)
}

/**
 * True when `value` is well-formed UTF-16. A lone surrogate has no UTF-8 form: SQLite and
 * ClickHouse would keep a replacement character instead, and the value would no longer match what
 * the caller sent. (`String.prototype.isWellFormed`, native since Node 20.)
 */
export const isWellFormed = (value: string): boolean => (value as string & { isWellFormed(): boolean }).isWellFormed()

/** The message for a string that is not well-formed. */
export const NOT_WELL_FORMED = "must be well-formed Unicode, got a string with a lone UTF-16 surrogate"

/** The schema id of {@link wellFormed}, by which a `Checker` knows it. */
export const WellFormedSchemaId: unique symbol = Symbol.for("@keymeter/core/Validation/WellFormed")

/** Refines a string schema to well-formed strings, with its own message. */
export const wellFormed = <S extends Schema.Schema<string, string, never>>(schema: S) =>
  schema.pipe(Schema.filter(isWellFormed, { schemaId: WellFormedSchemaId, message: () => NOT_WELL_FORMED }))

/**
 * A well-formed string of `min` to `max` characters; any failure reads
 * `must be <what> of <min> to <max> characters, got <value>`.
 */
export const boundedString = (what: string, min: number, max: number) =>
  wellFormed(expected(
    Schema.String.pipe(Schema.minLength(min), Schema.maxLength(max)),
    `must be ${what} of ${min} to ${max} characters`
  ))

/** Annotates `schema` so that any failure inside it reads `<expected>, got <value>`. */
export const expected = <S extends Schema.Schema.Any>(schema: S, expectation: string): S =>
  schema.annotations({
    message: (issue) => ({ message: `${expectation}, got ${describeValue(issue.actual)}`, override: true })
  }) as S

const formatPath = (path: ReadonlyArray<PropertyKey>): string => {
  let out = ""
  for (const segment of path) {
    out += typeof segment === "number" ? `[${segment}]` : out === "" ? String(segment) : `.${String(segment)}`
  }
  return out
}

/** The shape of a field's values, as a transport must read them from text. */
export type FieldKind = "string" | "number" | "boolean" | "array"

/** The shape of values of type `ast`: refinements, transformations and null/undefined are seen through. */
const kindOf = (ast: AST.AST): FieldKind => {
  switch (ast._tag) {
    case "Refinement":
      return kindOf(ast.from)
    case "Transformation":
      return kindOf(ast.to)
    case "Suspend":
      return kindOf(ast.f())
    case "Union": {
      const member = ast.types.find((t) => !AST.isUndefinedKeyword(t) && !(AST.isLiteral(t) && t.literal === null))
      return member === undefined ? "string" : kindOf(member)
    }
    case "TupleType":
      return "array"
    case "NumberKeyword":
      return "number"
    case "BooleanKeyword":
      return "boolean"
    case "Literal":
      return typeof ast.literal === "number" ? "number" : typeof ast.literal === "boolean" ? "boolean" : "string"
    default:
      return "string"
  }
}

/** The kind of every field of a struct, in declaration order. */
export const fieldKinds = (struct: Schema.Schema.AnyNoContext): Readonly<Record<string, FieldKind>> =>
  Object.fromEntries(AST.getPropertySignatures(struct.ast).map((p) => [String(p.name), kindOf(p.type)]))

/** Options of {@link formatParseError} and {@link decode}. */
export interface FormatOptions {
  /** Message for a field the schema does not know. */
  readonly unknownField?: string | undefined
  /** Name of the whole input in messages about its shape (default `input`). */
  readonly root?: string | undefined
}

/** One issue as `ParseResult.ArrayFormatter` reports it. */
export interface Issue {
  readonly _tag: string
  readonly path: ReadonlyArray<PropertyKey>
  readonly message: string
}

/**
 * One line per offending path, first message per path, joined with `; `. `root` is the whole
 * input, shown when the input itself has the wrong shape.
 */
export const formatIssues = (issues: ReadonlyArray<Issue>, root: unknown, options?: FormatOptions): string => {
  const seen = new Set<string>()
  const lines: Array<string> = []
  for (const issue of issues) {
    // `Schema.optional` adds an "Expected undefined" issue beside the real one: noise.
    if (issue._tag === "Type" && issue.message.startsWith("Expected undefined")) continue
    const path = formatPath(issue.path)
    if (seen.has(path)) continue
    seen.add(path)
    if (path === "") {
      lines.push(`${options?.root ?? "input"}: must be a JSON object, got ${describeValue(root)}`)
      continue
    }
    const message = issue._tag === "Unexpected"
      ? options?.unknownField ?? "is not a known field"
      : issue._tag === "Missing"
      ? "is required"
      : issue.message
    lines.push(`${path}: ${message}`)
  }
  return lines.join("; ")
}

/** {@link formatIssues} of a `ParseError`. */
export const formatParseError = (error: ParseResult.ParseError, options?: FormatOptions): string =>
  formatIssues(ParseResult.ArrayFormatter.formatErrorSync(error), error.issue.actual, options)

/** Decodes `input` with `schema`, failing with a {@link ValidationError} in envelope style. */
export const decode = <A, I>(schema: Schema.Schema<A, I, never>, options?: FormatOptions) => {
  const decodeUnknown = Schema.decodeUnknown(schema, { errors: "all", onExcessProperty: "error" })
  return (input: unknown): Effect.Effect<A, ValidationError> =>
    Effect.mapError(decodeUnknown(input), (error) => new ValidationError({ message: formatParseError(error, options) }))
}
