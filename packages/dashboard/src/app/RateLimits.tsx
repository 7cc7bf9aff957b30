/**
 * The rate-limits section: pick a namespace; see its limit decisions over a window (passed and
 * blocked per bucket, stacked, and the most blocked identifiers, whose rows filter the chart);
 * page through its overrides with the hits of each, create or edit one (the setOverride bounds
 * checked here and again by the server), delete one after a confirmation, and ask which override
 * applies to an identifier (getOverride with resolve). Write controls, and the decisions, show
 * only when the key holds the permission for them.
 */
import { MAX_IDENTIFIER_LENGTH } from "@keymeter/core/OverrideBounds"
import { required } from "@keymeter/core/Permission"
import { useEffect, useState } from "preact/hooks"
import { ApiError, explain, get, utcText } from "./Client.js"
import { ConfirmDelete } from "./ConfirmDelete.js"
import { Decisions } from "./Decisions.js"
import { type NamespaceItem, useNamespaces, useSelection } from "./Lists.js"
import { type Override, OverrideForm, type OverrideInput, windowText } from "./OverrideForm.js"
import { PagedTable, usePagedList } from "./Paging.js"
import { Picker } from "./Picker.js"
import { may, type Session, signedOut, write } from "./Session.js"
import { readSpan, spanParams } from "./TimeWindow.js"
import { param, sectionSearch, useSectionUrl } from "./Url.js"

/** Overrides per page. */
const PAGE = 20

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
