/**
 * Checkers compiled from schemas, for the hot paths: a synchronous yes for a value its schema
 * decodes to itself, at the speed of a hand-written check (the schema is compiled to JavaScript
 * once, as validators such as ajv do). So a route's input is declared once, as its Schema, and the
 * fast check is derived from it.
 *
 * A checker answers `true` only for a value the schema accepts unchanged; `false` means "let the
 * schema judge": it refuses (and words why), or accepts something the checker does not compile.
 * Compiled: structs of plain objects (`onExcessProperty: "error"`, as `Validation.decode` decodes;
 * symbol keys are not looked at, as nothing reads them), strings, numbers, booleans, literals,
 * undefined, unions, arrays, refinements (the usual ones as comparisons, others through their own
 * filter) and suspended schemas. Anything else (transformations, records, declarations) makes the
 * checker answer `false` wherever it occurs; {@link uncompiled} names it.
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import type { ValidationError } from "./Errors.js"
import type { FormatOptions } from "./Validation.js"
import * as Validation from "./Validation.js"
import { WellFormedSchemaId } from "./Validation.js"

/** A compiled check: true when the schema decodes `input` to itself. */
export type Checker<A> = (input: unknown) => input is A

type Check = (input: unknown) => boolean

const OPTIONS: AST.ParseOptions = { errors: "first", onExcessProperty: "error" }

/**
 * What a compilation gathers: the values generated code refers to (`r[i]`), what it could not
 * compile, and the suspended schemas met (a schema may refer to itself).
 */
interface Context {
  readonly refs: Array<unknown>
  readonly uncompiled: Array<string>
  readonly suspended: Map<AST.Suspend, string>
}

const ref = (context: Context, value: unknown): string => {
  context.refs.push(value)
  return `r[${context.refs.length - 1}]`
}

/** A function made of generated code (over the context's refs): one per struct and array. */
const generate = (context: Context, body: string): Check => {
  try {
    // The code is generated from schemas only, never from input: see `expression`.

    return new Function("r", `"use strict"; return function (v) { ${body} }`)(context.refs) as Check
  } catch {
    // Where code cannot be generated (a policy forbids it), every input goes to the schema.
    return () => false
  }
}

/**
 * The refinements Effect's Schema (and `Validation`) make, as expressions over `x`, read from their
 * annotations: a refinement's own filter costs ten times the comparison it wraps.
 */
const knownRefinement = (ast: AST.Refinement, x: string): string | undefined => {
  const id = Option.getOrUndefined(AST.getSchemaIdAnnotation(ast))
  const json = Option.getOrUndefined(AST.getJSONSchemaAnnotation(ast)) as Record<string, unknown> | undefined
  const n = (name: string) => {
    const value = json?.[name]
    return typeof value === "number" && Number.isFinite(value) ? String(value) : undefined
  }
  const bound = (text: (value: string) => string, name: string) => {
    const value = n(name)
    return value === undefined ? undefined : text(value)
  }
  switch (id) {
    case Schema.MinLengthSchemaId:
      return bound((value) => `${x}.length >= ${value}`, "minLength")
    case Schema.MaxLengthSchemaId:
      return bound((value) => `${x}.length <= ${value}`, "maxLength")
    case Schema.MinItemsSchemaId:
      return bound((value) => `${x}.length >= ${value}`, "minItems")
    case Schema.MaxItemsSchemaId:
      return bound((value) => `${x}.length <= ${value}`, "maxItems")
    case Schema.IntSchemaId:
      return `Number.isSafeInteger(${x})`
    case Schema.BetweenSchemaId: {
      const min = n("minimum")
      const max = n("maximum")
      return min === undefined || max === undefined ? undefined : `${x} >= ${min} && ${x} <= ${max}`
    }
    case Schema.GreaterThanOrEqualToSchemaId:
      return bound((value) => `${x} >= ${value}`, "minimum")
    case Schema.LessThanOrEqualToSchemaId:
      return bound((value) => `${x} <= ${value}`, "maximum")
    case WellFormedSchemaId:
      return `${x}.isWellFormed()`
  }
  return undefined
}

/** A JavaScript expression true when `x` passes `ast` (see the module for what compiles). */
const expression = (ast: AST.AST, x: string, context: Context): string => {
  switch (ast._tag) {
    case "StringKeyword":
      return `typeof ${x} === "string"`
    case "NumberKeyword":
      return `typeof ${x} === "number"`
    case "BooleanKeyword":
      return `typeof ${x} === "boolean"`
    case "UndefinedKeyword":
      return `${x} === undefined`
    case "UnknownKeyword":
      return "true"
    case "Literal":
      if (typeof ast.literal === "bigint" || (typeof ast.literal === "number" && !Number.isFinite(ast.literal))) break
      return `${x} === ${JSON.stringify(ast.literal)}`
    case "Refinement": {
      const from = expression(ast.from, x, context)
      const filter = ast.filter
      const own = knownRefinement(ast, x) ??
        `${ref(context, (input: unknown) => Option.isNone(filter(input, OPTIONS, ast)))}(${x})`
      return `(${from} && ${own})`
    }
    case "Union":
      return `(${ast.types.map((member) => expression(member, x, context)).join(" || ")})`
    case "Suspend": {
      const seen = context.suspended.get(ast)
      if (seen !== undefined) return `${seen}(${x})`
      const slot = { check: (() => false) as Check }
      const name = `${ref(context, slot)}.check`
      context.suspended.set(ast, name)
      slot.check = generate(context, `return ${expression(ast.f(), "v", context)}`)
      return `${name}(${x})`
    }
    case "TupleType": {
      if (ast.elements.length > 0 || ast.rest.length !== 1) break
      const item = expression(ast.rest[0]!.type, "x", context)
      const check = generate(
        context,
        `for (let i = 0; i < v.length; i++) { const x = v[i]; if (!(${item})) return false } return true`
      )
      return `(Array.isArray(${x}) && ${ref(context, check)}(${x}))`
    }
    case "TypeLiteral":
      if (ast.indexSignatures.length === 0) return `${ref(context, struct(ast, context))}(${x})`
      // A record of string keys to anything (`meta`): a plain object; its values are not looked at.
      if (
        ast.propertySignatures.length === 0 && ast.indexSignatures.length === 1 &&
        AST.isStringKeyword(ast.indexSignatures[0]!.parameter) && AST.isUnknownKeyword(ast.indexSignatures[0]!.type)
      ) {
        return `${ref(context, isPlainObject)}(${x})`
      }
      break
  }
  context.uncompiled.push(ast._tag)
  return "false"
}

/** An object as JSON and object literals make them: not an array, of no class. */
const isPlainObject = (v: unknown): boolean => {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return false
  const p = Object.getPrototypeOf(v)
  return p === Object.prototype || p === null
}

const struct = (ast: AST.TypeLiteral, context: Context): Check => {
  const fields = ast.propertySignatures.map((property) => ({
    name: JSON.stringify(String(property.name)),
    optional: property.isOptional,
    type: property.type
  }))
  // Plain objects only (what JSON and object literals make), whose enumerable keys are their own.
  const lines = [
    `if (typeof v !== "object" || v === null) return false`,
    `const p = Object.getPrototypeOf(v)`,
    `if (p !== Object.prototype && p !== null) return false`,
    `for (const k in v) switch (k) { ${fields.map((f) => `case ${f.name}: `).join("")}break; default: return false }`,
    "let x"
  ]
  for (const field of fields) {
    const check = expression(field.type, "x", context)
    lines.push(
      `x = v[${field.name}]`,
      `if (x === undefined ? (Object.hasOwn(v, ${field.name}) ? !(${check}) : ${!field
        .optional}) : !(${check})) return false`
    )
  }
  lines.push("return true")
  return generate(context, lines.join("\n"))
}

const compileWith = (schema: Schema.Schema.AnyNoContext) => {
  const context: Context = { refs: [], uncompiled: [], suspended: new Map() }
  const ast = schema.ast
  const check = AST.isTypeLiteral(ast) && ast.indexSignatures.length === 0
    ? struct(ast, context)
    : generate(context, `return ${expression(ast, "v", context)}`)
  return { check, uncompiled: context.uncompiled }
}

/** The checker of `schema` (see the module). */
export const compile = <A, I>(schema: Schema.Schema<A, I, never>): Checker<A> => compileWith(schema).check as Checker<A>

/**
 * `Validation.decode(schema, options)` with the compiled check as its first turn: an input the
 * check accepts is its own decoding, at once; any other is decoded (or refused, and worded) by the
 * schema.
 */
export const decode = <A, I>(schema: Schema.Schema<A, I, never>, options?: FormatOptions) => {
  const check = compile(schema)
  const decodeBySchema = Validation.decode(schema, options)
  return (input: unknown): Effect.Effect<A, ValidationError> =>
    check(input) ? Effect.succeed(input) : decodeBySchema(input)
}

/**
 * `Schema.encodeSync(schema)` with the compiled check as its first turn: a value the check accepts
 * is its own encoding (a check compiles no transformation); any other is encoded by the schema.
 */
export const encode = <A, I>(schema: Schema.Schema<A, I, never>): (value: A) => I => {
  const check = compile(schema)
  const encodeBySchema = Schema.encodeSync(schema)
  return (value) => (check(value) ? value as unknown as I : encodeBySchema(value))
}

/** What `schema` holds that a checker does not compile (by AST tag); empty when all of it compiles. */
export const uncompiled = (schema: Schema.Schema.AnyNoContext): ReadonlyArray<string> => compileWith(schema).uncompiled
