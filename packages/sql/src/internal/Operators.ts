/**
 * Binary operators: AND and OR (three-valued), comparisons, string concatenation, arithmetic, and a
 * time moved by an INTERVAL.
 */
import type * as Ast from "../Ast.js"
import type { Compiled, Eval } from "./Context.js"
import { BindFault } from "./Context.js"
import { shift } from "./Functions.js"
import { comparable, folded, needCondition } from "./Typing.js"
import type { IntervalValue, VType } from "./Values.js"
import { compare, isNumeric, QueryFault, truthy } from "./Values.js"

/** A binary operator over its compiled operands: logic, comparison, `||`, arithmetic and time shifts. */
export const compileBinary = (expr: Ast.Binary, left: Compiled, right: Compiled): Compiled => {
  const [a, b] = [left.eval, right.eval]
  const constant = left.constant && right.constant
  const op = expr.op
  switch (op) {
    case "AND":
    case "OR": {
      needCondition(left, op, expr.at)
      needCondition(right, op, expr.at)
      const and = op === "AND"
      return folded({
        type: "Int",
        eval: (env) => {
          const x = a(env)
          if (and && x !== null && !truthy(x)) return 0
          if (!and && truthy(x)) return 1
          const y = b(env)
          if (and) return y !== null && !truthy(y) ? 0 : x === null || y === null ? null : 1
          return truthy(y) ? 1 : x === null || y === null ? null : 0
        },
        constant
      })
    }
    case "=":
    case "!=":
    case "<":
    case "<=":
    case ">":
    case ">=": {
      comparable(left.type, right.type, `'${op}'`, expr.at)
      const test = op === "=" ?
        (c: number) => c === 0
        : op === "!=" ?
        (c: number) => c !== 0
        : op === "<" ?
        (c: number) => c < 0
        : op === "<=" ?
        (c: number) => c <= 0
        : op === ">" ?
        (c: number) => c > 0
        : (c: number) => c >= 0
      const numbers = (left.type === "Int" || left.type === "Float") && (right.type === "Int" || right.type === "Float")
      const strings = left.type === "String" && right.type === "String"
      // Numbers, and strings for (in)equality, compare with JS's own operators: the same answers as
      // `compare` (NaN is unequal to all and unordered; strings by code unit), without its dispatch.
      if (numbers || (strings && (op === "=" || op === "!="))) {
        return folded({ type: "Int", eval: primitiveComparison(op, a, b), constant })
      }
      return folded({
        type: "Int",
        eval: (env) => {
          const x = a(env)
          const y = b(env)
          if (x === null || y === null) return null
          if (typeof x === "number" && typeof y === "number" && (Number.isNaN(x) || Number.isNaN(y))) {
            return op === "!="
              ? 1
              : 0
          }
          return test(compare(x, y)) ? 1 : 0
        },
        constant
      })
    }
    case "||": {
      if ((left.type !== "String" && left.type !== "Null") || (right.type !== "String" && right.type !== "Null")) {
        throw new BindFault(`'||' joins Strings, got ${left.type} and ${right.type}`, expr.at)
      }
      return folded({
        type: "String",
        eval: (env) => {
          const x = a(env)
          const y = b(env)
          return x === null || y === null ? null : (x as string) + (y as string)
        },
        constant
      })
    }
    default: {
      if ((op === "+" || op === "-") && (left.type === "Interval" || right.type === "Interval")) {
        if (right.type === "Interval" && isNumeric(left.type)) {
          const sign = op === "+" ? 1 : -1
          return folded({
            type: "Int",
            eval: (env) => {
              const x = a(env)
              return x === null ? null : shift(x as number, b(env) as IntervalValue, sign)
            },
            constant
          })
        }
        if (op === "+" && left.type === "Interval" && isNumeric(right.type)) {
          return folded({
            type: "Int",
            eval: (env) => {
              const y = b(env)
              return y === null ? null : shift(y as number, a(env) as IntervalValue, 1)
            },
            constant
          })
        }
        throw new BindFault(`'${op}' takes a time and an INTERVAL (time - INTERVAL 1 DAY)`, expr.at)
      }
      if (!isNumeric(left.type) || !isNumeric(right.type)) {
        throw new BindFault(`'${op}' needs numbers, got ${left.type} and ${right.type}`, expr.at)
      }
      const integer = left.type !== "Float" && right.type !== "Float"
      const type: VType = op === "/" ? "Float" : integer ? "Int" : "Float"
      const apply = op === "+" ?
        (x: number, y: number) => x + y
        : op === "-" ?
        (x: number, y: number) => x - y
        : op === "*" ?
        (x: number, y: number) => x * y
        : op === "/" ?
        (x: number, y: number) => x / y
        : integer
        ? (x: number, y: number) => {
          if (y === 0) throw new QueryFault("division by zero in '%'", expr.at)
          return x % y
        }
        : (x: number, y: number) => x % y
      return folded({
        type,
        eval: (env) => {
          const x = a(env)
          const y = b(env)
          return x === null || y === null ? null : apply(x as number, y as number)
        },
        constant
      })
    }
  }
}

/** A comparison of two numbers (or two strings, for `=` and `!=`), NULL when either is NULL. */
const primitiveComparison = (op: "=" | "!=" | "<" | "<=" | ">" | ">=", a: Eval, b: Eval): Eval => {
  switch (op) {
    case "=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : x === y ? 1 : 0
      }
    case "!=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : x !== y ? 1 : 0
      }
    case "<":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) < (y as number) ? 1 : 0
      }
    case "<=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) <= (y as number) ? 1 : 0
      }
    case ">":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) > (y as number) ? 1 : 0
      }
    case ">=":
      return (env) => {
        const x = a(env)
        const y = b(env)
        return x === null || y === null ? null : (x as number) >= (y as number) ? 1 : 0
      }
  }
}
