/**
 * Datapoints from an answer's rows, by functions compiled once per set of columns.
 */
import type { AggregationResult } from "../Aggregation.js"
import type { Datapoint } from "../Datapoint.js"
import { Outcomes } from "../Verification.js"

const OUTCOMES = Outcomes.length

type Build = (rows: AggregationResult, order: ArrayLike<number>, out: Array<Datapoint>) => Array<Datapoint>

const builders = new Map<string, Build>()

/**
 * The datapoints of `rows`, row `order[i]` at `i`: one function per set of columns, whose object
 * literal gives every datapoint of an answer the same shape (faster to build and to serialise than
 * properties added one by one). Field order is the wire's. The loop is in the compiled function,
 * its columns read once: called once a row, a maker cost 130-200 ns a datapoint against ~40 (30,000
 * datapoints, each call reading the columns of rows of several shapes). The answer's array is made
 * here, outside the compiled loop: V8's optimized code allocates `new Array(n)` inline only below
 * ~16,000 elements and is thrown away at the first larger answer, whose datapoints were then built
 * by the interpreter (a 30,000-datapoint answer built in 13-30 ms on first sight, 4-9 repeated).
 */
export const datapoints = (rows: AggregationResult, order: ArrayLike<number>): Array<Datapoint> => {
  const columns = (["time", "keyId", "identity", "tag", "tags"] as const).filter((c) => rows[c] !== undefined)
  const id = columns.join(",")
  let build = builders.get(id)
  if (build === undefined) {
    // Counters below 2^31 are written as small integers (`| 0`): read from a Float64Array as they
    // are, V8 boxed each in a heap number of its own, twelve allocations a datapoint where one will do.
    const int = (v: string) => `(${v} < 2147483648 ? ${v} | 0 : ${v})`
    build = new Function(
      "rows",
      "order",
      "out",
      `"use strict";
      const c = rows.counts;
      ${columns.map((c) => `const column_${c} = rows.${c};`).join(" ")}
      const n = order.length;
      for (let i = 0; i < n; i++) {
        const row = order[i], b = row * ${OUTCOMES};
        ${Outcomes.map((_, o) => `const c${o} = c[b + ${o}];`).join(" ")}
        const total = ${Outcomes.map((_, o) => `c${o}`).join(" + ")};
        out[i] = { ${columns.map((c) => `${c}: column_${c}[row], `).join("")}total: ${int("total")}, ${
        Outcomes.map((name, o) => `${name}: ${int(`c${o}`)}`).join(", ")
      } };
      }
      return out;`
    ) as Build
    builders.set(id, build)
  }
  return build(rows, order, new Array(order.length))
}
