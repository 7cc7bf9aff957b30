/**
 * Query-string input, derived from a route's input struct in core: the wire schema HttpApi
 * documents (and checks for scalars given twice), and the reader that turns the text into the
 * struct's values before core decodes them. Rules: arrays are repeated keys (`keyId=a&keyId=b`),
 * and for the arrays whose values cannot hold a comma (ids, names from a fixed list) commas
 * separate values too (`keyId=a,b`: Unkey's v1 client joins arrays so); numbers are plain decimal
 * digits in the safe-integer range; an empty value counts as absent; a scalar given twice or an
 * unknown name is an error.
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import { ValidationError } from "@keymeter/core/Errors"
import type { FieldKind } from "@keymeter/core/Validation"
import { describeValue, fieldKinds } from "@keymeter/core/Validation"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"

const DIGITS = /^[0-9]+$/
const NONE: ReadonlySet<string> = new Set()

/** Reads `raw` (as the router parsed it) by `spec`, collecting every error into one message. */
export const parse = (
  raw: Readonly<Record<string, string | ReadonlyArray<string>>>,
  spec: Readonly<Record<string, FieldKind>>,
  commaSeparated: ReadonlySet<string> = NONE
): Either.Either<Record<string, unknown>, ValidationError> => {
  const out: Record<string, unknown> = {}
  const errors: Array<string> = []
  for (const name of Object.keys(raw)) {
    const kind = Object.hasOwn(spec, name) ? spec[name] : undefined
    if (kind === undefined) {
      errors.push(`${name}: is not a known parameter (known: ${Object.keys(spec).join(", ")})`)
      continue
    }
    const given = raw[name]!
    const values = (typeof given === "string" ? [given] : given).filter((v) => v !== "")
    if (values.length === 0) continue
    if (kind === "array") {
      out[name] = commaSeparated.has(name) ? values.flatMap((v) => v.split(",")).filter((v) => v !== "") : values
      continue
    }
    if (values.length > 1) {
      errors.push(`${name}: must be given once, got ${values.length} values`)
      continue
    }
    const value = values[0]!
    if (kind === "string") {
      out[name] = value
      continue
    }
    if (kind === "boolean") {
      if (value === "true" || value === "false") out[name] = value === "true"
      else errors.push(`${name}: must be true or false, got ${describeValue(value)}`)
      continue
    }
    const number = DIGITS.test(value) ? Number(value) : NaN
    if (!Number.isSafeInteger(number)) {
      errors.push(`${name}: must be an integer in plain decimal digits, got ${describeValue(value)}`)
      continue
    }
    out[name] = number
  }
  return errors.length > 0 ? Either.left(new ValidationError({ message: errors.join("; ") })) : Either.right(out)
}

/** The description of a field: its own, or that of the value it may hold. */
const descriptionOf = (ast: AST.AST): string | undefined => {
  const own = AST.getDescriptionAnnotation(ast)
  if (Option.isSome(own)) return own.value
  if (AST.isUnion(ast)) {
    const member = ast.types.find((t) => !AST.isUndefinedKeyword(t))
    return member === undefined ? undefined : descriptionOf(member)
  }
  return undefined
}

const HOW: Record<FieldKind, (name: string) => string> = {
  array: (name) => `Repeat the parameter for several: ${name}=a&${name}=b.`,
  number: () => "Decimal digits.",
  boolean: () => "true or false.",
  string: () => ""
}

/** The wire form of `struct` for HttpApi and OpenAPI: text values, a repeatable parameter per array. */
export const schema = (struct: Schema.Schema.AnyNoContext) => {
  const kinds = fieldKinds(struct)
  const fields: Record<string, Schema.Schema.All | Schema.PropertySignature.All> = {}
  for (const property of AST.getPropertySignatures(struct.ast)) {
    const name = String(property.name)
    const kind = kinds[name]!
    const description = [descriptionOf(property.type), HOW[kind](name)].filter(Boolean).join(" ")
    const wire = kind === "array"
      ? Schema.Array(Schema.String).annotations({ description })
      : Schema.String.annotations({ description, message: () => "must be given once" })
    fields[name] = property.isOptional ? Schema.optional(wire) : wire
  }
  // No identifier: OpenAPI lists the parameters of an anonymous struct one by one.
  return Schema.Struct(fields)
}

/** Reads the current request's query string as the values of `struct`'s fields. */
export const reader = (struct: Schema.Schema.AnyNoContext) => {
  const kinds = fieldKinds(struct)
  return Effect.flatMap(HttpServerRequest.ParsedSearchParams, (raw) => parse(raw, kinds))
}
