/** Test helpers: plain events as the columns a store's scan hands over, and a scan over them. */
import { QueryTooLarge } from "@keymeter/core/Errors"
import type { RatelimitColumns, ScanScope, VerificationColumns } from "@keymeter/core/EventScan"
import { Outcomes } from "@keymeter/core/Verification"
import type { Outcome } from "@keymeter/core/Verification"
import * as Effect from "effect/Effect"

export interface Event {
  readonly workspaceId: string
  readonly time: number
  readonly apiId: string
  readonly keyId: string
  readonly identityId: string
  readonly externalId: string
  readonly outcome: Outcome
  readonly tags: ReadonlyArray<string>
  readonly spentCredits: number
  readonly latency: number
  readonly region: string
}

export interface Decision {
  readonly workspaceId: string
  readonly time: number
  readonly namespaceId: string
  readonly identifier: string
  readonly passed: boolean
  readonly latency: number
  readonly overrideId: string
}

const dictionary = <A>(values: ReadonlyArray<A>, key: (a: A) => string = String) => {
  const codes = new Map<string, number>()
  const out: Array<A> = []
  const column = values.map((value) => {
    const k = key(value)
    let code = codes.get(k)
    if (code === undefined) {
      code = out.length
      out.push(value)
      codes.set(k, code)
    }
    return code
  })
  return { codes: Uint32Array.from(column), values: out }
}

const select = <A extends { workspaceId: string; time: number }>(
  rows: ReadonlyArray<A>,
  scope: ScanScope,
  id: (a: A) => string
) =>
  rows.filter((row) =>
    row.workspaceId === scope.workspaceId && row.time >= scope.from && row.time < scope.to &&
    (scope.within === undefined || scope.within.includes(id(row)))
  )

/** A scan over plain events, in batches of `batch` rows. */
export const verificationScan = (events: ReadonlyArray<Event>, batch = 1000) => (scope: ScanScope) =>
  Effect.suspend(() => {
    const rows = select(events, scope, (e) => e.apiId)
    if (rows.length > scope.maxRows) return Effect.fail(new QueryTooLarge({ message: "too many rows" }))
    const out: Array<VerificationColumns> = []
    for (let i = 0; i < rows.length; i += batch) {
      const part = rows.slice(i, i + batch)
      out.push({
        length: part.length,
        time: part.map((e) => e.time),
        apiId: dictionary(part.map((e) => e.apiId)),
        keyId: dictionary(part.map((e) => e.keyId)),
        identityId: dictionary(part.map((e) => e.identityId)),
        externalId: dictionary(part.map((e) => e.externalId)),
        outcome: part.map((e) => Outcomes.indexOf(e.outcome)),
        tags: dictionary(part.map((e) => e.tags), (tags) => JSON.stringify(tags)),
        spentCredits: part.map((e) => e.spentCredits),
        latency: part.map((e) => e.latency),
        region: dictionary(part.map((e) => e.region))
      })
    }
    return Effect.succeed(out)
  })

export const ratelimitScan = (decisions: ReadonlyArray<Decision>, batch = 1000) => (scope: ScanScope) =>
  Effect.suspend(() => {
    const rows = select(decisions, scope, (d) => d.namespaceId)
    if (rows.length > scope.maxRows) return Effect.fail(new QueryTooLarge({ message: "too many rows" }))
    const out: Array<RatelimitColumns> = []
    for (let i = 0; i < rows.length; i += batch) {
      const part = rows.slice(i, i + batch)
      out.push({
        length: part.length,
        time: part.map((d) => d.time),
        namespaceId: dictionary(part.map((d) => d.namespaceId)),
        identifier: dictionary(part.map((d) => d.identifier)),
        passed: part.map((d) => d.passed ? 1 : 0),
        latency: part.map((d) => d.latency),
        overrideId: dictionary(part.map((d) => d.overrideId))
      })
    }
    return Effect.succeed(out)
  })
