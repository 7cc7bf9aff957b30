/**
 * The one place where values become ClickHouse SQL text. The 18.16 server keymeter supports
 * predates server-side query parameters (`{name:Type}` with `param_name=` fails with "Unknown
 * setting param_name"), so values are written as literals; on ClickHouse >= 19.15 these would be
 * bound as parameters instead. Identifiers (tables, columns) are never built from input: they are
 * constants of this package.
 *
 * Strings are quoted with `'` and every character the lexer treats specially is escaped:
 * backslash, quote, and control characters (NUL included) as `\xHH`. Everything else, multi-byte
 * UTF-8 included, passes through as is: inside quotes it has no meaning to the parser.
 */
import { isWellFormed } from "@keymeter/core/Validation"

/** A value this encoder can write. */
export type Value = string | number | ReadonlyArray<Value>

/** A value that has no literal form (a non-integer, an unsafe integer, a lone surrogate). */
export class LiteralError extends Error {
  override readonly name = "LiteralError"
}

const escapeChar = (c: string): string => {
  switch (c) {
    case "\\":
      return "\\\\"
    case "'":
      return "\\'"
    default:
      return "\\x" + c.charCodeAt(0).toString(16).padStart(2, "0")
  }
}

// Backslash, quote, C0 controls and DEL: the control characters are the point here.
// eslint-disable-next-line no-control-regex
const SPECIAL = /[\\'\u0000-\u001f\u007f]/g

/** `'...'` with the special characters escaped. */
export const string = (value: string): string => {
  // Core refuses such input at the boundary; a surrogate half alone cannot be encoded as UTF-8.
  if (!isWellFormed(value)) throw new LiteralError("A string with a lone UTF-16 surrogate has no UTF-8 form")
  return "'" + value.replace(SPECIAL, escapeChar) + "'"
}

/** An integer in plain decimal digits; anything else is refused rather than approximated. */
export const integer = (value: number): string => {
  if (!Number.isSafeInteger(value)) throw new LiteralError(`Not a safe integer: ${value}`)
  return String(value)
}

/** A literal of any supported value; numbers must be integers, arrays are `[a, b]`. */
export const encode = (value: Value): string =>
  typeof value === "string"
    ? string(value)
    : typeof value === "number"
    ? integer(value)
    : "[" + value.map(encode).join(", ") + "]"

/**
 * A SQL text with its `${...}` values written as literals:
 * ``sql`SELECT 1 FROM t WHERE api_id = ${apiId}` ``. The template's own text is trusted (it is
 * code); only the values are encoded.
 */
export const sql = (parts: TemplateStringsArray, ...values: ReadonlyArray<Value>): string => {
  let out = parts[0]!
  for (let i = 0; i < values.length; i++) out += encode(values[i]!) + parts[i + 1]!
  return out
}
