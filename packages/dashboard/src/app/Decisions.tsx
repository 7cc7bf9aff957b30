/**
 * A namespace's limit decisions over a window (getRatelimits): passed and blocked per bucket,
 * stacked, the window's totals, and the most blocked identifiers, whose rows filter the rest.
 */
import { useEffect, useState } from "preact/hooks"
import { Chart, type Point, type Series, Tiles, totalsOf } from "./Chart.js"
import { explain, get } from "./Client.js"
import { type Session, signedOut } from "./Session.js"
import { rangeOf, type Span, SpanControls } from "./TimeWindow.js"
import { FilterChips, Top } from "./Top.js"

/** A decision's series: passed at the bottom of the stack, blocked over it. */
const DECISIONS = [
  ["passed", "passed", "#2e9e5b"],
  ["blocked", "blocked", "#c0392b"]
] as const satisfies ReadonlyArray<Series<string>>

/** A row of a getRatelimits answer. */
type Decision = Point<"total" | "passed" | "blocked"> & { readonly identifier?: string }

/** The most blocked identifiers' counts. */
const COUNTS = [
  ["total", (row: Decision) => row.total],
  ["passed", (row: Decision) => row.passed],
  ["blocked", (row: Decision) => row.blocked]
] as const

/** Rows of the most blocked identifiers. */
const TOP = 10

/**
 * A namespace's limit decisions over a window: passed and blocked per bucket and the window's
 * totals (of one identifier, when filtered to it), and the most blocked identifiers of the whole
 * namespace, a row of which filters the rest.
 */
export const Decisions = (props: {
  session: Session
  namespaceId: string
  name: string
  span: Span
  identifier: string
  onSpan: (span: Span) => void
  onIdentifier: (identifier: string) => void
  href: (identifier: string) => string
}) => {
  const { identifier, namespaceId, session, span } = props
  const [state, setState] = useState<
    { kind: "loading" } | { kind: "error"; message: string } | {
      kind: "ready"
      points: ReadonlyArray<Decision>
      bucket: string
    }
  >({ kind: "loading" })
  const [top, setTop] = useState<ReadonlyArray<Decision> | undefined>()
  const read = (query: Record<string, string | undefined>) =>
    get<ReadonlyArray<Decision>>(session.rootKey, "analytics.getRatelimits", { namespaceId, ...query })
  const forbidden = `read the limit decisions of namespace ${props.name}`
  const spanKey = [span.window, span.start, span.end, span.resolution]
  useEffect(() => {
    const { bucket, end, start } = rangeOf(span)
    // An answer for a view left meanwhile (another row clicked) is dropped.
    let current = true
    setState({ kind: "loading" })
    read({ start: String(start), end: String(end), identifier: identifier || undefined, groupBy: bucket }).then(
      (points) => current && setState({ kind: "ready", points, bucket }),
      (error: unknown) => {
        if (current && !signedOut(session, error)) setState({ kind: "error", message: explain(error, forbidden) })
      }
    )
    return () => {
      current = false
    }
  }, [namespaceId, identifier, ...spanKey])
  // The top list is the namespace's whatever the filter, so that another row can be picked.
  useEffect(() => {
    const { end, start } = rangeOf(span)
    let current = true
    setTop(undefined)
    read({
      start: String(start),
      end: String(end),
      groupBy: "identifier",
      orderBy: "blocked",
      order: "desc",
      limit: String(TOP)
    })
      .then(
        (rows) => current && setTop(rows),
        // The chart above says why.
        () => current && setTop([])
      )
    return () => {
      current = false
    }
  }, [namespaceId, ...spanKey])
  const totals = state.kind === "ready" ? totalsOf(state.points, ["total", "passed", "blocked"]) : undefined
  return (
    <section class="decisions" aria-label="limit decisions">
      <h2>Limit decisions in {props.name}</h2>
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <SpanControls span={span} onChange={props.onSpan} />
      </form>
      <FilterChips
        filters={identifier === "" ? [] : [["identifier", identifier]]}
        onRemove={() => props.onIdentifier("")}
      />
      {state.kind === "loading" && <p class="empty" aria-live="polite">Loading…</p>}
      {state.kind === "error" && <p class="error" role="alert">{state.message}</p>}
      {state.kind === "ready" && totals !== undefined && (
        <>
          <Tiles totals={totals} tiles={[["total", "decisions"], ["passed", "passed"], ["blocked", "blocked"]]} />
          {totals.total === 0
            ? (
              <p class="empty">
                No limit decisions{identifier === "" ? "" : ` for ${identifier}`}{" "}
                in this window. ratelimits.limit records them (and keys.verifyKey, for keys with limits).
              </p>
            )
            : (
              <Chart
                points={state.points}
                series={DECISIONS}
                bucket={state.bucket}
                label={`limit decisions per ${state.bucket}, passed and blocked`}
              />
            )}
        </>
      )}
      <div class="tops">
        <Top
          title="Most blocked identifiers"
          name="identifier"
          rows={top}
          label={(row) => row.identifier ?? ""}
          columns={COUNTS}
          href={(row) => props.href(row.identifier ?? "")}
          onPick={(row) => props.onIdentifier(row.identifier ?? "")}
          picked={identifier || undefined}
        />
      </div>
    </section>
  )
}
