/**
 * The usage section: pick an api, a window and a resolution; verifications over time by outcome,
 * the window's totals, and top-10 keys, identities and tags whose rows filter the view. The view
 * lives in the URL (bookmarkable, back and forward), the key never does.
 */
import { useEffect, useState } from "preact/hooks"
import { Chart, type Point, type Series, Tiles, totalsOf } from "./Chart.js"
import { explain, get } from "./Client.js"
import { useApis } from "./Lists.js"
import { Picker } from "./Picker.js"
import { type Session, signedOut } from "./Session.js"
import { rangeOf, readSpan, type Span, SpanControls, spanOf, spanParams } from "./TimeWindow.js"
import { FilterChips, Top } from "./Top.js"

/** The nine outcomes: wire name, label, colour; valid first, so it sits at the bottom of a stack. */
const OUTCOMES = [
  ["valid", "valid", "#2e9e5b"],
  ["rateLimited", "rate limited", "#e0a100"],
  ["usageExceeded", "usage exceeded", "#8e44ad"],
  ["insufficientPermissions", "insufficient permissions", "#c0392b"],
  ["forbidden", "forbidden", "#e74c3c"],
  ["unauthorized", "unauthorized", "#d35400"],
  ["disabled", "disabled", "#7f8c8d"],
  ["expired", "expired", "#f39c12"],
  ["notFound", "not found", "#34495e"]
] as const satisfies ReadonlyArray<Series<string>>
type Outcome = typeof OUTCOMES[number][0]
type Datapoint = Point<Outcome | "total">

/** What the page shows: the api, the window and the filters, all in the URL. */
interface View extends Span {
  readonly apiId: string
  readonly keyId?: string | undefined
  readonly externalId?: string | undefined
  readonly tag?: string | undefined
}
const FILTERS = ["keyId", "externalId", "tag"] as const

const readView = (): View => {
  const params = new URLSearchParams(location.search)
  const view: Record<string, string> = {}
  for (const name of FILTERS) {
    const value = params.get(name)
    if (value) view[name] = value
  }
  return { apiId: params.get("apiId") ?? "", ...readSpan(params, "7d"), ...view }
}

/** The view's query parameters (filters included), as the URL and the API take them. */
const paramsOf = (view: View) => {
  const params = new URLSearchParams()
  if (view.apiId) params.set("apiId", view.apiId)
  for (const [name, value] of Object.entries(spanParams(view))) if (value !== "") params.set(name, value)
  for (const name of FILTERS) if (view[name] !== undefined) params.set(name, view[name]!)
  return params
}

type Row = Datapoint & { keyId?: string; identity?: { id: string; externalId: string }; tag?: string }

/** The top tables' counts. */
const COUNTS = [["total", (row: Row) => row.total], ["valid", (row: Row) => row.valid]] as const

/** The usage section: an api's verifications over a window, by outcome, with its top lists. */
export const Usage = (props: { session: Session }) => {
  const [view, setView] = useState(readView)
  const apis = useApis(props.session)
  // No api in the URL: the first this key may read.
  useEffect(() => {
    const first = apis.items?.[0]
    if (first !== undefined) setView((current) => current.apiId === "" ? { ...current, apiId: first.apiId } : current)
  }, [apis.items])
  const [state, setState] = useState<
    { kind: "idle" } | { kind: "loading" } | { kind: "error"; message: string } | {
      kind: "ready"
      points: ReadonlyArray<Datapoint>
      bucket: string
    }
  >({ kind: "idle" })
  const [tops, setTops] = useState<{
    keys?: ReadonlyArray<Row>
    identities?: ReadonlyArray<Row>
    tags?: ReadonlyArray<Row>
  }>({})
  useEffect(() => {
    const params = paramsOf(view)
    if (location.search !== `?${params}`) history.pushState(null, "", `${location.pathname}?${params}`)
    if (view.apiId === "") return setState({ kind: "idle" })
    const { bucket, end, start } = rangeOf(view)
    setState({ kind: "loading" })
    const route = "analytics.getVerifications"
    const query = (extra: Record<string, string>) => ({
      apiId: view.apiId,
      start: String(start),
      end: String(end),
      keyId: view.keyId,
      externalId: view.externalId,
      tag: view.tag,
      ...extra
    })
    setTops({})
    const top = (groupBy: string) =>
      get<ReadonlyArray<Row>>(
        props.session.rootKey,
        route,
        query({ groupBy, orderBy: "total", order: "desc", limit: "10" })
      )
    void Promise.all([top("key"), top("identity"), top("tag")]).then(
      ([keys, identities, tags]) => setTops({ keys, identities, tags }),
      () => setTops({ keys: [], identities: [], tags: [] })
    )
    get<ReadonlyArray<Datapoint>>(props.session.rootKey, route, query({ groupBy: bucket })).then(
      (points) => setState({ kind: "ready", points, bucket }),
      (error: unknown) => {
        if (!signedOut(props.session, error)) {
          setState({ kind: "error", message: explain(error, `read api ${view.apiId}`) })
        }
      }
    )
  }, [view.apiId, view.window, view.start, view.end, view.resolution, view.keyId, view.externalId, view.tag])
  // Back and forward move between views.
  useEffect(() => {
    const back = () => setView(readView())
    addEventListener("popstate", back)
    return () => removeEventListener("popstate", back)
  }, [])
  const totals = state.kind === "ready"
    ? totalsOf(state.points, ["total", ...OUTCOMES.map(([n]) => n)])
    : undefined
  const pick = (filter: Partial<View>) => setView({ ...view, ...filter })
  return (
    <main>
      <FilterChips
        filters={FILTERS.flatMap((name) => view[name] !== undefined ? [[name, view[name]!] as const] : [])}
        onRemove={(name) => setView({ ...view, [name]: undefined })}
      />
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <Picker
          label="Api"
          name="apiId"
          value={view.apiId}
          items={apis.items?.map((api) => ({ id: api.apiId, text: `${api.name} (${api.apiId})` }))}
          onChange={(apiId) => setView({ apiId, ...spanOf(view) })}
        />
        <SpanControls span={view} onChange={(span) => setView({ ...view, ...span })} />
      </form>
      {state.kind === "idle" && (
        <p class="empty">
          {apis.error !== undefined
            ? apis.error
            : apis.items !== undefined && apis.items.length === 0
            ? "This key may read no api yet. Create one (apis.createApi), or sign in with a key that may read one."
            : "Pick an api to see its verifications."}
        </p>
      )}
      {state.kind === "loading" && <p class="empty" aria-live="polite">Loading…</p>}
      {state.kind === "error" && <p class="error" role="alert">{state.message}</p>}
      {state.kind === "ready" && totals !== undefined && (
        <>
          <Tiles totals={totals} tiles={[["total", "total"], ...OUTCOMES.map(([n, label]) => [n, label] as const)]} />
          {totals.total === 0
            ? (
              <p class="empty">
                No verifications in this window. Record some (analytics.recordVerifications) or verify keys
                (keys.verifyKey).
              </p>
            )
            : (
              <Chart
                points={state.points}
                series={OUTCOMES}
                bucket={state.bucket}
                label={`verifications per ${state.bucket} by outcome`}
              />
            )}
          <div class="tops">
            <Top
              title="Top keys"
              name="keys"
              rows={tops.keys}
              label={(r) => r.keyId ?? ""}
              columns={COUNTS}
              href={(r) => `?${paramsOf({ ...view, keyId: r.keyId })}`}
              onPick={(r) => pick({ keyId: r.keyId })}
              picked={view.keyId}
            />
            <Top
              title="Top identities"
              name="identities"
              rows={tops.identities?.filter((r) => r.identity !== undefined)}
              label={(r) => r.identity!.externalId}
              columns={COUNTS}
              href={(r) => `?${paramsOf({ ...view, externalId: r.identity!.externalId })}`}
              onPick={(r) => pick({ externalId: r.identity!.externalId })}
              picked={view.externalId}
            />
            <Top
              title="Top tags"
              name="tags"
              rows={tops.tags}
              label={(r) => r.tag ?? ""}
              columns={COUNTS}
              href={(r) => `?${paramsOf({ ...view, tag: r.tag })}`}
              onPick={(r) => pick({ tag: r.tag })}
              picked={view.tag}
            />
          </div>
        </>
      )}
    </main>
  )
}
