/**
 * How a function of the subset refuses its arguments' types: a SignatureError, a message the binder
 * gives the place of (shared by scalars and aggregates).
 */
import type { VType } from "./Values.js"
import { isNumeric } from "./Values.js"

/** A signature fault, as a message; the binder adds the place. */
export class SignatureError {
  constructor(readonly message: string) {}
}

export const fail = (message: string): never => {
  throw new SignatureError(message)
}

export const needNumber = (name: string, type: VType, position: number) => {
  if (!isNumeric(type)) fail(`${name} needs a number as argument ${position}, got ${type}`)
}
export const needString = (name: string, type: VType, position: number) => {
  if (type !== "String" && type !== "Null") fail(`${name} needs a String as argument ${position}, got ${type}`)
}
export const needArray = (name: string, type: VType, position: number) => {
  if (type !== "Array(String)") fail(`${name} needs an Array(String) as argument ${position}, got ${type}`)
}
