/**
 * Query-string rules: arrays are repeated keys (`keyId=a&keyId=b`, commas are not separators);
 * numbers are plain decimal digits in the safe-integer range; an empty value counts as absent;
 * a scalar given twice or an unknown name is an error.
 */
import { ValidationError } from "@keymeter/core/Errors"
import { describeValue } from "@keymeter/core/Validation"
import * as Either from "effect/Either"

/** How a parameter is read. */
export type Kind = "string" | "strings" | "integer" | "boolean"

const DIGITS = /^[0-9]+$/

/** Reads `raw` (as the router parsed it) by `spec`, collecting every error into one message. */
export const parse = (
  raw: Readonly<Record<string, string | ReadonlyArray<string>>>,
  spec: Readonly<Record<string, Kind>>
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
    if (kind === "strings") {
      out[name] = values
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
