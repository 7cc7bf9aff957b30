/**
 * Datapoints from an answer's rows, by functions compiled once per set of columns.
 */
import type { AggregationResult } from "../Aggregation.js"
import type { Datapoint } from "../Datapoint.js"
import { Outcomes } from "../Verification.js"

const OUTCOMES = Outcomes.length

/**
 * Builds datapoints of rows with the columns of `rows`: one function per set of columns, whose
 * object literal gives every datapoint of an answer the same shape (faster to build and to
 * serialise than properties added one by one). Field order is the wire's.
 */
const datapointMakers = new Map<string, (rows: AggregationResult, row: number) => Datapoint>()
export const datapointMaker = (rows: AggregationResult) => {
  const columns = (["time", "keyId", "identity", "tag", "tags"] as const).filter((c) => rows[c] !== undefined)
  const id = columns.join(",")
  let make = datapointMakers.get(id)
  if (make === undefined) {
    // Counters below 2^31 are written as small integers (`| 0`): read from a Float64Array as they
    // are, V8 boxed each in a heap number of its own, twelve allocations a datapoint where one will do.
    const int = (v: string) => `(${v} < 2147483648 ? ${v} | 0 : ${v})`
    make = new Function(
      "rows",
      "row",
      `"use strict";
      const c = rows.counts, b = row * ${OUTCOMES};
      ${Outcomes.map((_, o) => `const c${o} = c[b + ${o}];`).join(" ")}
      const total = ${Outcomes.map((_, o) => `c${o}`).join(" + ")};
      return { ${columns.map((c) => `${c}: rows.${c}[row], `).join("")}total: ${int("total")}, ${
        Outcomes.map((name, o) => `${name}: ${int(`c${o}`)}`).join(", ")
      } };`
    ) as (rows: AggregationResult, row: number) => Datapoint
    datapointMakers.set(id, make)
  }
  return make
}
