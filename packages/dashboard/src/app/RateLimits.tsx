/**
 * The rate-limits section: pick a namespace, page through its overrides, create or edit one (the
 * setOverride bounds checked here and again by the server), delete one after a confirmation, and
 * ask which override applies to an identifier (getOverride with resolve). Write controls show only
 * when the key holds the permission for them.
 */
import { MAX_DURATION, MAX_IDENTIFIER_LENGTH, MIN_DURATION, MIN_IDENTIFIER_LENGTH } from "@keymeter/core/OverrideBounds"
import { required } from "@keymeter/core/Permission"
import { useEffect, useRef, useState } from "preact/hooks"
import { ApiError, explain, get, post, utcText } from "./Client.js"
import { ConfirmDelete } from "./ConfirmDelete.js"
import { useNamespaces } from "./Lists.js"
import { Pager, usePaging } from "./Paging.js"
import { Picker } from "./Picker.js"
import { may, type Session, signedOut } from "./Session.js"

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
}

interface OverridePage {
  readonly overrides: ReadonlyArray<Override>
  readonly total: number
  readonly cursor?: string
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
    problems.duration = "The window is from 1 second to 30 days, in whole milliseconds."
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
  const [draft, setDraft] = useState<Draft>(() => {
    const [duration, unit] = inUnits(props.editing?.duration ?? 60_000)
    return {
      namespaceName: "",
      identifier: props.editing?.identifier ?? "",
      limit: String(props.editing?.limit ?? 100),
      duration: String(duration),
      unit,
      async: props.editing?.async ?? false
    }
  })
  const [checked, setChecked] = useState(false)
  const [failure, setFailure] = useState<string | undefined>()
  const [saving, setSaving] = useState(false)
  const first = useRef<HTMLInputElement>(null)
  useEffect(() => first.current?.focus(), [])
  const problems = checked ? problemsOf(draft, props.newNamespace) : {}
  const set = (field: keyof Draft) => (e: Event) => {
    const target = e.target as HTMLInputElement | HTMLSelectElement
    setDraft({ ...draft, [field]: target.type === "checkbox" ? (target as HTMLInputElement).checked : target.value })
  }
  const field = (name: keyof Draft) => ({
    name,
    "aria-invalid": problems[name] !== undefined,
    "aria-describedby": problems[name] !== undefined ? `problem-${name}` : undefined
  })
  const problem = (name: keyof Draft) =>
    problems[name] !== undefined && <span class="problem" id={`problem-${name}`}>{problems[name]}</span>
  return (
    <form
      class="panel override-form"
      aria-label={props.editing === undefined ? "new override" : `edit override ${props.editing.identifier}`}
      noValidate
      onSubmit={(event) => {
        event.preventDefault()
        setChecked(true)
        if (Object.keys(problemsOf(draft, props.newNamespace)).length > 0) return
        setSaving(true)
        setFailure(undefined)
        const size = UNITS.find(([unit]) => unit === draft.unit)![2]
        props.onSave({
          ...(props.newNamespace ? { namespaceName: draft.namespaceName.trim() } : {}),
          identifier: draft.identifier,
          limit: Number(draft.limit),
          duration: Number(draft.duration) * size,
          async: draft.async
        }).catch((error: unknown) => {
          setSaving(false)
          setFailure(error instanceof Error ? error.message : String(error))
        })
      }}
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
            onInput={set("namespaceName")}
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
          onInput={set("identifier")}
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
          onInput={set("limit")}
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
            onInput={set("duration")}
          />
        </label>
        <label>
          Unit
          <select name="unit" value={draft.unit} onChange={set("unit")}>
            {UNITS.map(([unit, label]) => <option key={unit} value={unit}>{label}</option>)}
          </select>
        </label>
        {problem("duration")}
      </div>
      <label class="inline">
        <input type="checkbox" name="async" checked={draft.async} onChange={set("async")} />
        Async (decide from this server's view, synchronise after)
      </label>
      {failure !== undefined && <p class="error" role="alert">{failure}</p>}
      <div class="actions">
        <button type="submit" disabled={saving}>{saving ? "Saving…" : "Save override"}</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
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
  const [namespaceId, setNamespaceId] = useState(() => new URLSearchParams(location.search).get("namespaceId") ?? "")
  const paging = usePaging()
  const [version, setVersion] = useState(0)
  const [list, setList] = useState<
    { kind: "loading" } | { kind: "error"; message: string } | { kind: "ready"; page: OverridePage }
  >({ kind: "loading" })
  const [form, setForm] = useState<{ editing: Override | undefined; newNamespace: boolean } | undefined>()
  const [status, setStatus] = useState<string | undefined>()

  useEffect(() => {
    const first = namespaces.items?.[0]
    if (namespaceId === "" && first !== undefined) setNamespaceId(first.namespaceId)
  }, [namespaces.items])
  useEffect(() => {
    const params = new URLSearchParams({ section: "ratelimits" })
    if (namespaceId !== "") params.set("namespaceId", namespaceId)
    if (location.search !== `?${params}`) history.replaceState(null, "", `${location.pathname}?${params}`)
  }, [namespaceId])
  useEffect(() => {
    if (namespaceId === "") return
    setList({ kind: "loading" })
    get<OverridePage>(session.rootKey, "ratelimits.listOverrides", {
      namespaceId,
      limit: String(PAGE),
      cursor: paging.cursor
    }).then(
      (page) => setList({ kind: "ready", page }),
      (error: unknown) => {
        if (!signedOut(session, error)) {
          setList({ kind: "error", message: explain(error, `read the overrides of namespace ${namespaceId}`) })
        }
      }
    )
  }, [namespaceId, paging.key, version])

  const canSet = namespaceId !== "" && may(session, required.setOverride(namespaceId))
  const canDelete = namespaceId !== "" && may(session, required.deleteOverride(namespaceId))
  const canCreateNamespace = may(session, required.createNamespace())
  const name = namespaces.items?.find((n) => n.namespaceId === namespaceId)?.name ?? namespaceId

  const save = async (
    input: { namespaceName?: string; identifier: string; limit: number; duration: number; async: boolean }
  ) => {
    const where = input.namespaceName !== undefined ? {} : { namespaceId }
    try {
      await post(session.rootKey, "ratelimits.setOverride", { ...where, ...input })
    } catch (error) {
      if (signedOut(session, error)) return
      throw new Error(explain(error, `set overrides in namespace ${input.namespaceName ?? name}`))
    }
    setForm(undefined)
    setStatus(`Override ${input.identifier} saved: ${input.limit} per ${windowText(input.duration)}.`)
    if (input.namespaceName !== undefined) {
      // The new namespace's id comes from the list, found by its name.
      const created = await get<{ namespaces: ReadonlyArray<{ namespaceId: string; name: string }> }>(
        session.rootKey,
        "ratelimits.listNamespaces"
      ).catch(() => ({ namespaces: [] }))
      namespaces.reload()
      const found = created.namespaces.find((n) => n.name === input.namespaceName)
      if (found !== undefined) {
        setNamespaceId(found.namespaceId)
        paging.reset()
      }
    }
    setVersion((v) => v + 1)
  }
  const remove = async (override: Override) => {
    try {
      await post(session.rootKey, "ratelimits.deleteOverride", { namespaceId, identifier: override.identifier })
    } catch (error) {
      if (signedOut(session, error)) return
      throw new Error(explain(error, `delete overrides in namespace ${name}`))
    }
    setStatus(`Override ${override.identifier} deleted.`)
    // A page emptied by the deletion shows the one before it.
    if (list.kind === "ready" && list.page.overrides.length === 1 && paging.index > 0) {
      paging.previous()
    } else setVersion((v) => v + 1)
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
            paging.reset()
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
          <section class="panel" aria-label="overrides">
            <h2>Overrides in {name}</h2>
            {list.kind === "loading" && <p class="empty" aria-live="polite">Loading…</p>}
            {list.kind === "error" && <p class="error" role="alert">{list.message}</p>}
            {list.kind === "ready" && list.page.total === 0 && (
              <p class="empty">
                No overrides in this namespace: every identifier gets the limit its caller asks for.
                {canSet ? " Add one with New override." : ""}
              </p>
            )}
            {list.kind === "ready" && list.page.overrides.length > 0 && (
              <>
                <div class="scroll">
                  <table>
                    <thead>
                      <tr>
                        <th scope="col">identifier</th>
                        <th scope="col">limit</th>
                        <th scope="col">window</th>
                        <th scope="col">async</th>
                        <th scope="col">updated</th>
                        {(canSet || canDelete) && <th scope="col">actions</th>}
                      </tr>
                    </thead>
                    <tbody>
                      {list.page.overrides.map((override) => (
                        <OverrideRow
                          key={override.id}
                          override={override}
                          canSet={canSet}
                          canDelete={canDelete}
                          onEdit={() => setForm({ editing: override, newNamespace: false })}
                          onDelete={() => remove(override)}
                        />
                      ))}
                    </tbody>
                  </table>
                </div>
                <Pager
                  label="override pages"
                  paging={paging}
                  size={PAGE}
                  shown={list.page.overrides.length}
                  total={list.page.total}
                  cursor={list.page.cursor}
                />
              </>
            )}
          </section>
          <Resolve session={session} namespaceId={namespaceId} />
        </>
      )}
    </main>
  )
}
