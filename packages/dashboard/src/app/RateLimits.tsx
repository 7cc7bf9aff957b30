/**
 * The rate-limits section: pick a namespace; see its limit decisions over a window (passed and
 * blocked per bucket, stacked, and the most blocked identifiers, whose rows filter the chart);
 * page through its overrides with the hits of each, create or edit one (the setOverride bounds
 * checked here and again by the server), delete one after a confirmation, and ask which override
 * applies to an identifier (getOverride with resolve). Write controls, and the decisions, show
 * only when the key holds the permission for them.
 */
import { MAX_DURATION, MAX_IDENTIFIER_LENGTH, MIN_DURATION, MIN_IDENTIFIER_LENGTH } from "@keymeter/core/OverrideBounds"
import { required } from "@keymeter/core/Permission"
import { useEffect, useState } from "preact/hooks"
import { Chart, type Point, type Series, Tiles, totalsOf } from "./Chart.js"
import { ApiError, explain, get, utcText } from "./Client.js"
import { ConfirmDelete } from "./ConfirmDelete.js"
import { useDraft } from "./Form.js"
import { type NamespaceItem, useNamespaces, useSelection } from "./Lists.js"
import { PagedTable, usePagedList } from "./Paging.js"
import { Picker } from "./Picker.js"
import { may, type Session, signedOut, write } from "./Session.js"
import { rangeOf, readSpan, type Span, SpanControls, spanParams } from "./TimeWindow.js"
import { FilterChips, Top } from "./Top.js"
import { param, sectionSearch, useSectionUrl } from "./Url.js"

/** Overrides per page. */
const PAGE = 20

interface Override {
  readonly id: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly async: boolean
  readonly createdAt: number
  readonly updatedAt: number
  /** Decisions it made, and the last one's time (absent while it made none). */
  readonly hits: number
  readonly lastHitAt?: number | undefined
}

/** What the form sends to setOverride (the namespace by name when it is a new one). */
interface OverrideInput {
  readonly namespaceName?: string
  readonly identifier: string
  readonly limit: number
  readonly duration: number
  readonly async: boolean
}

/** The units a window is written in, largest first. */
const UNITS = [
  ["d", "days", 86_400_000],
  ["h", "hours", 3_600_000],
  ["min", "minutes", 60_000],
  ["s", "seconds", 1000],
  ["ms", "milliseconds", 1]
] as const
type Unit = typeof UNITS[number][0]

/** A window in the largest unit that divides it: 60000 -> [1, "min"]. */
const inUnits = (ms: number): readonly [number, Unit] => {
  const [unit, , size] = UNITS.find(([, , size]) => ms % size === 0)!
  return [ms / size, unit]
}

/** A window as people read it: "1 min", "90 s". */
export const windowText = (ms: number) => inUnits(ms).join(" ")

/** What the form holds, as typed. */
interface Draft {
  readonly namespaceName: string
  readonly identifier: string
  readonly limit: string
  readonly duration: string
  readonly unit: Unit
  readonly async: boolean
}

/** The form's problems, by field; empty when the server may be asked. */
const problemsOf = (draft: Draft, newNamespace: boolean): Partial<Record<keyof Draft, string>> => {
  const problems: Partial<Record<keyof Draft, string>> = {}
  if (newNamespace && (draft.namespaceName.trim() === "" || draft.namespaceName.length > 255)) {
    problems.namespaceName = "Give the new namespace a name of 1 to 255 characters."
  }
  if (draft.identifier.length < MIN_IDENTIFIER_LENGTH || draft.identifier.length > MAX_IDENTIFIER_LENGTH) {
    problems.identifier =
      `An identifier has ${MIN_IDENTIFIER_LENGTH} to ${MAX_IDENTIFIER_LENGTH} characters (* matches any run of them).`
  }
  const limit = Number(draft.limit)
  if (draft.limit.trim() === "" || !Number.isSafeInteger(limit) || limit < 0) {
    problems.limit = "The limit is a whole number of requests, 0 or more."
  }
  const size = UNITS.find(([unit]) => unit === draft.unit)![2]
  const duration = Number(draft.duration) * size
  if (
    draft.duration.trim() === "" || !Number.isSafeInteger(duration) || duration < MIN_DURATION ||
    duration > MAX_DURATION
  ) {
    problems.duration = "The window is 1 second or more, in whole milliseconds."
  }
  return problems
}

/** Create (with an empty identifier) or edit (identifier fixed) one override. */
const OverrideForm = (props: {
  editing: Override | undefined
  newNamespace: boolean
  onSave: (
    input: { namespaceName?: string; identifier: string; limit: number; duration: number; async: boolean }
  ) => Promise<void>
  onCancel: () => void
}) => {
  const form = useDraft<Draft>(() => {
    const [duration, unit] = inUnits(props.editing?.duration ?? 60_000)
    return {
      namespaceName: "",
      identifier: props.editing?.identifier ?? "",
      limit: String(props.editing?.limit ?? 100),
      duration: String(duration),
      unit,
      async: props.editing?.async ?? false
    }
  }, (draft) => problemsOf(draft, props.newNamespace))
  const { draft, field, first, problem } = form
  return (
    <form
      class="panel override-form"
      aria-label={props.editing === undefined ? "new override" : `edit override ${props.editing.identifier}`}
      noValidate
      onSubmit={form.submit((draft) => {
        const size = UNITS.find(([unit]) => unit === draft.unit)![2]
        return props.onSave({
          ...(props.newNamespace ? { namespaceName: draft.namespaceName.trim() } : {}),
          identifier: draft.identifier,
          limit: Number(draft.limit),
          duration: Number(draft.duration) * size,
          async: draft.async
        })
      })}
    >
      <h2>{props.editing === undefined ? "New override" : `Edit override ${props.editing.identifier}`}</h2>
      {props.newNamespace && (
        <label>
          New namespace
          <input
            {...field("namespaceName")}
            ref={first}
            value={draft.namespaceName}
            maxLength={255}
          />
          {problem("namespaceName")}
        </label>
      )}
      <label>
        Identifier (or pattern with *)
        <input
          {...field("identifier")}
          ref={props.newNamespace ? null : first}
          value={draft.identifier}
          readOnly={props.editing !== undefined}
          minLength={MIN_IDENTIFIER_LENGTH}
          maxLength={MAX_IDENTIFIER_LENGTH}
        />
        {problem("identifier")}
      </label>
      <label>
        Limit (requests per window)
        <input
          {...field("limit")}
          type="number"
          min={0}
          step={1}
          inputMode="numeric"
          value={draft.limit}
        />
        {problem("limit")}
      </label>
      <div class="duration">
        <label>
          Window
          <input
            {...field("duration")}
            type="number"
            min={0}
            step={1}
            inputMode="numeric"
            value={draft.duration}
          />
        </label>
        <label>
          Unit
          <select {...field("unit")} value={draft.unit}>
            {UNITS.map(([unit, label]) => <option key={unit} value={unit}>{label}</option>)}
          </select>
        </label>
        {problem("duration")}
      </div>
      <label class="inline">
        <input type="checkbox" {...field("async")} checked={draft.async} />
        Async (decide from this server's view, synchronise after)
      </label>
      {form.failure !== undefined && <p class="error" role="alert">{form.failure}</p>}
      <div class="actions">
        <button type="submit" disabled={form.saving}>{form.saving ? "Saving…" : "Save override"}</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  )
}

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
const Decisions = (props: {
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

/** "Which override applies to identifier X?" — the winning rule, or none. */
const Resolve = (props: { session: Session; namespaceId: string }) => {
  const [identifier, setIdentifier] = useState("")
  const [answer, setAnswer] = useState<
    | { kind: "found"; asked: string; override: Override }
    | { kind: "none"; asked: string }
    | {
      kind: "error"
      message: string
    }
    | { kind: "loading" }
    | undefined
  >()
  useEffect(() => setAnswer(undefined), [props.namespaceId])
  return (
    <form
      class="panel"
      aria-label="which override applies"
      onSubmit={(event) => {
        event.preventDefault()
        const asked = identifier
        if (asked === "") return
        setAnswer({ kind: "loading" })
        get<Override>(props.session.rootKey, "ratelimits.getOverride", {
          namespaceId: props.namespaceId,
          identifier: asked,
          resolve: "true"
        }).then(
          (override) => setAnswer({ kind: "found", asked, override }),
          (error: unknown) => {
            if (signedOut(props.session, error)) return
            if (error instanceof ApiError && error.status === 404) return setAnswer({ kind: "none", asked })
            setAnswer({ kind: "error", message: explain(error, "read this namespace's overrides") })
          }
        )
      }}
    >
      <h2>Which override applies?</h2>
      <div class="row">
        <label>
          Identifier
          <input
            name="resolveIdentifier"
            value={identifier}
            maxLength={MAX_IDENTIFIER_LENGTH}
            onInput={(e) => setIdentifier((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit">Find</button>
      </div>
      <div aria-live="polite" data-testid="resolved">
        {answer?.kind === "loading" && <p class="empty">Looking…</p>}
        {answer?.kind === "found" && (
          <p>
            <strong>{answer.override.identifier}</strong>
            {answer.override.identifier === answer.asked ? " (its own override)" : " (a pattern)"} applies to{" "}
            {answer.asked}: {answer.override.limit} per {windowText(answer.override.duration)}
            {answer.override.async ? ", async" : ""}.
          </p>
        )}
        {answer?.kind === "none" && (
          <p>
            No override applies to {answer.asked}: the limit given to ratelimits.limit holds.
          </p>
        )}
        {answer?.kind === "error" && <p class="error" role="alert">{answer.message}</p>}
      </div>
    </form>
  )
}

/** One override's row, with its edit and delete controls. */
const OverrideRow = (props: {
  override: Override
  canSet: boolean
  canDelete: boolean
  onEdit: () => void
  onDelete: () => Promise<void>
}) => {
  const { override } = props
  return (
    <tr>
      <td class="mono">{override.identifier}</td>
      <td>{override.limit}</td>
      <td>{windowText(override.duration)}</td>
      <td>{override.async ? "yes" : "no"}</td>
      <td>{utcText(override.updatedAt)}</td>
      <td>{override.hits}</td>
      <td>{override.lastHitAt === undefined ? "never" : utcText(override.lastHitAt)}</td>
      {(props.canSet || props.canDelete) && (
        <td class="actions">
          {props.canSet && (
            <button type="button" aria-label={`edit ${override.identifier}`} onClick={props.onEdit}>Edit</button>
          )} {props.canDelete && <ConfirmDelete what={override.identifier} onConfirm={props.onDelete} />}
        </td>
      )}
    </tr>
  )
}

export const RateLimits = (props: { session: Session }) => {
  const { session } = props
  const namespaces = useNamespaces(session)
  const [namespaceId, setNamespaceId] = useSelection(namespaces, (n) => n.namespaceId, "namespaceId")
  const [form, setForm] = useState<{ editing: Override | undefined; newNamespace: boolean } | undefined>()
  const [status, setStatus] = useState<string | undefined>()
  // Rate limits are a recent matter: the last day, in hours, unless the URL says otherwise.
  const [span, setSpan] = useState(() => readSpan(new URLSearchParams(location.search), "24h"))
  const [identifier, setIdentifier] = useState(() => param("identifier"))
  const view = { namespaceId, ...spanParams(span) }
  useSectionUrl("ratelimits", { ...view, identifier })
  const list = usePagedList<Override>(
    session,
    namespaceId === "" ? undefined : namespaceId,
    (cursor) =>
      get<{ overrides: ReadonlyArray<Override>; total: number; cursor?: string }>(
        session.rootKey,
        "ratelimits.listOverrides",
        { namespaceId, limit: String(PAGE), cursor }
      ).then((page) => ({ ...page, items: page.overrides })),
    `read the overrides of namespace ${namespaceId}`
  )

  const canSet = namespaceId !== "" && may(session, required.setOverride(namespaceId))
  const canDelete = namespaceId !== "" && may(session, required.deleteOverride(namespaceId))
  const canCreateNamespace = may(session, required.createNamespace())
  const canReadDecisions = namespaceId !== "" && may(session, required.readRatelimitAnalytics(namespaceId))
  const name = namespaces.items?.find((n) => n.namespaceId === namespaceId)?.name ?? namespaceId

  const save = async (input: OverrideInput) => {
    const body = input.namespaceName !== undefined ? input : { namespaceId, ...input }
    const forbidden = `set overrides in namespace ${input.namespaceName ?? name}`
    if (await write(session, "ratelimits.setOverride", body, forbidden) === undefined) return
    setForm(undefined)
    setStatus(`Override ${input.identifier} saved: ${input.limit} per ${windowText(input.duration)}.`)
    if (input.namespaceName !== undefined) {
      // The new namespace's id comes from the list, found by its name.
      const listed = await get<{ namespaces: ReadonlyArray<NamespaceItem> }>(
        session.rootKey,
        "ratelimits.listNamespaces"
      ).catch(() => ({ namespaces: [] }))
      namespaces.reload()
      const found = listed.namespaces.find((n) => n.name === input.namespaceName)
      if (found !== undefined) {
        setNamespaceId(found.namespaceId)
        return list.reset()
      }
    }
    list.reload()
  }
  const remove = async (override: Override) => {
    const body = { namespaceId, identifier: override.identifier }
    if (
      await write(session, "ratelimits.deleteOverride", body, `delete overrides in namespace ${name}`) === undefined
    ) {
      return
    }
    setStatus(`Override ${override.identifier} deleted.`)
    list.reload(true)
  }

  return (
    <main>
      <h2 class="visually-hidden">Rate limits</h2>
      <form class="controls" onSubmit={(e) => e.preventDefault()}>
        <Picker
          label="Namespace"
          name="namespaceId"
          value={namespaceId}
          items={namespaces.items?.map((n) => ({ id: n.namespaceId, text: `${n.name} (${n.namespaceId})` }))}
          onChange={(id) => {
            setNamespaceId(id)
            setIdentifier("")
            list.reset()
            setForm(undefined)
            setStatus(undefined)
          }}
        />
        {canSet && form === undefined && (
          <button
            type="button"
            onClick={() => setForm({ editing: undefined, newNamespace: false })}
          >
            New override
          </button>
        )}
        {canCreateNamespace && form === undefined && (
          <button
            type="button"
            onClick={() => setForm({ editing: undefined, newNamespace: true })}
          >
            New namespace
          </button>
        )}
      </form>
      {status !== undefined && <p class="status" role="status">{status}</p>}
      {form !== undefined && (
        <OverrideForm
          key={`${form.editing?.identifier ?? ""}/${form.newNamespace}`}
          editing={form.editing}
          newNamespace={form.newNamespace}
          onSave={save}
          onCancel={() => setForm(undefined)}
        />
      )}
      {namespaces.error !== undefined && <p class="error" role="alert">{namespaces.error}</p>}
      {namespaceId === "" && namespaces.items !== undefined && namespaces.items.length === 0 && (
        <p class="empty">
          {canCreateNamespace
            ? "No namespaces yet. Create one with its first override (New namespace), or call ratelimits.limit."
            : "This key may read the overrides of no namespace yet."}
        </p>
      )}
      {namespaceId !== "" && (
        <>
          {canReadDecisions
            ? (
              <Decisions
                session={session}
                namespaceId={namespaceId}
                name={name}
                span={span}
                identifier={identifier}
                onSpan={setSpan}
                onIdentifier={setIdentifier}
                href={(picked) => sectionSearch("ratelimits", { ...view, identifier: picked })}
              />
            )
            : (
              <p class="empty" role="note">
                This key may not read the limit decisions of {name}, so no charts here: they take{" "}
                <code>ratelimit.*.read_analytics</code> or <code>ratelimit.{namespaceId}.read_analytics</code>.
              </p>
            )}
          <PagedTable
            label="overrides"
            title={`Overrides in ${name}`}
            list={list}
            size={PAGE}
            empty={`No overrides in this namespace: every identifier gets the limit its caller asks for.${
              canSet ? " Add one with New override." : ""
            }`}
            headers={[
              "identifier",
              "limit",
              "window",
              "async",
              "updated",
              "hits",
              "last hit",
              ...(canSet || canDelete ? ["actions"] : [])
            ]}
            row={(override) => (
              <OverrideRow
                key={override.id}
                override={override}
                canSet={canSet}
                canDelete={canDelete}
                onEdit={() => setForm({ editing: override, newNamespace: false })}
                onDelete={() => remove(override)}
              />
            )}
          />
          <Resolve session={session} namespaceId={namespaceId} />
        </>
      )}
    </main>
  )
}
