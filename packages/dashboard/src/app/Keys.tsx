/**
 * The keys section: pick an api, page through its keys (of one external id, if asked), create a
 * key (its secret shown this once), disable or enable one, delete one after a confirmation. Write
 * controls show only when the key holds the permission for them.
 */
import { required } from "@keymeter/core/Permission"
import { useEffect, useRef, useState } from "preact/hooks"
import { get, utcText } from "./Client.js"
import { ConfirmDelete } from "./ConfirmDelete.js"
import { useDraft } from "./Form.js"
import { useApis, useSelection } from "./Lists.js"
import { PagedTable, usePagedList } from "./Paging.js"
import { Picker } from "./Picker.js"
import { may, type Session, write } from "./Session.js"
import { param, useSectionUrl } from "./Url.js"

/** Keys per page. */
const PAGE = 20

/** A key as `apis.listKeys` answers it (Unkey v1's shape). */
interface Key {
  readonly id: string
  readonly start: string
  readonly name?: string
  readonly enabled: boolean
  readonly expires?: number
  readonly remaining?: number
  readonly identity?: { readonly externalId: string }
  readonly createdAt: number
}

interface Draft {
  readonly name: string
  readonly prefix: string
  readonly externalId: string
  readonly credits: string
  readonly expires: string
}

const EMPTY: Draft = { name: "", prefix: "", externalId: "", credits: "", expires: "" }

/** The form's problems, by field; empty when the server may be asked. */
const problemsOf = (draft: Draft, now: number): Partial<Record<keyof Draft, string>> => {
  const problems: Partial<Record<keyof Draft, string>> = {}
  if (draft.name.length > 255) problems.name = "A name has at most 255 characters."
  if (draft.prefix !== "" && !/^[a-zA-Z0-9]{1,16}$/.test(draft.prefix)) {
    problems.prefix = "A prefix is 1 to 16 letters or digits."
  }
  if (draft.externalId.length > 255) problems.externalId = "An external id has at most 255 characters."
  const credits = Number(draft.credits)
  if (draft.credits.trim() !== "" && (!Number.isSafeInteger(credits) || credits < 0)) {
    problems.credits = "Credits are a whole number, 0 or more; leave empty for no credit limit."
  }
  const expires = Date.parse(draft.expires + "Z")
  if (draft.expires !== "" && !(expires > now)) problems.expires = "A key expires in the future (UTC)."
  return problems
}

const CreateKeyForm = (props: {
  apiId: string
  onCreate: (input: Record<string, unknown>) => Promise<void>
  onCancel: () => void
}) => {
  const form = useDraft<Draft>(EMPTY, (draft) => problemsOf(draft, Date.now()))
  const input = (name: keyof Draft, label: string, extra: Record<string, unknown> = {}) => (
    <label>
      {label}
      <input {...form.field(name)} value={form.draft[name]} {...extra} />
      {form.problem(name)}
    </label>
  )
  return (
    <form
      class="panel key-form"
      aria-label="new key"
      noValidate
      onSubmit={form.submit((draft) =>
        props.onCreate({
          apiId: props.apiId,
          ...(draft.name !== "" ? { name: draft.name } : {}),
          ...(draft.prefix !== "" ? { prefix: draft.prefix } : {}),
          ...(draft.externalId !== "" ? { externalId: draft.externalId } : {}),
          ...(draft.credits.trim() !== "" ? { remaining: Number(draft.credits) } : {}),
          ...(draft.expires !== "" ? { expires: Date.parse(draft.expires + "Z") } : {})
        })
      )}
    >
      <h2>New key</h2>
      {input("name", "Name (optional)", { ref: form.first, maxLength: 255 })}
      {input("prefix", "Prefix (optional)", { maxLength: 16 })}
      {input("externalId", "External id (optional: the customer it is for)", { maxLength: 255 })}
      {input("credits", "Credits (optional: uses before it is spent)", { type: "number", min: 0, step: 1 })}
      {input("expires", "Expires (optional, UTC)", { type: "datetime-local" })}
      {form.failure !== undefined && <p class="error" role="alert">{form.failure}</p>}
      <div class="actions">
        <button type="submit" disabled={form.saving}>{form.saving ? "Creating…" : "Create key"}</button>
        <button type="button" onClick={props.onCancel}>Cancel</button>
      </div>
    </form>
  )
}

/** A new key's secret, shown this once. */
const Secret = (props: { keyId: string; secret: string; onDone: () => void }) => {
  const [copied, setCopied] = useState(false)
  const field = useRef<HTMLInputElement>(null)
  useEffect(() => field.current?.select(), [])
  return (
    <section class="panel secret" aria-label="new key's secret">
      <h2>Key {props.keyId} created</h2>
      <p>Copy its secret now: it is shown this once and never stored.</p>
      <div class="row">
        <label>
          Secret
          <input ref={field} name="secret" readOnly value={props.secret} class="mono" />
        </label>
        <button
          type="button"
          onClick={() =>
            navigator.clipboard?.writeText(props.secret).then(() => setCopied(true), () => field.current?.select())}
        >
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" onClick={props.onDone}>Done</button>
      </div>
    </section>
  )
}

/** One key's row: its id links to its usage; its enable/disable and delete controls. */
const KeyRow = (props: {
  item: Key
  apiId: string
  canUpdate: boolean
  canDelete: boolean
  onUsage: (search: string) => void
  onEnable: (enabled: boolean) => Promise<void>
  onDelete: () => Promise<void>
}) => {
  const key = props.item
  const [failure, setFailure] = useState<string | undefined>()
  const usage = new URLSearchParams({ apiId: props.apiId, window: "30d", keyId: key.id }).toString()
  return (
    <tr>
      <td class="mono">
        <a
          href={`?${usage}`}
          aria-label={`usage of ${key.id}`}
          onClick={(event) => {
            event.preventDefault()
            props.onUsage(usage)
          }}
        >
          {key.id}
        </a>
        <br />
        <span class="empty">{key.start}…</span>
      </td>
      <td>{key.name ?? ""}</td>
      <td>{key.identity?.externalId ?? ""}</td>
      <td>{key.enabled ? "enabled" : "disabled"}</td>
      <td>{key.remaining ?? "∞"}</td>
      <td>{key.expires !== undefined ? utcText(key.expires) : "never"}</td>
      <td>{utcText(key.createdAt)}</td>
      {(props.canUpdate || props.canDelete) && (
        <td class="actions">
          {props.canUpdate && (
            <button
              type="button"
              aria-label={`${key.enabled ? "disable" : "enable"} ${key.id}`}
              onClick={() =>
                props.onEnable(!key.enabled).then(
                  () => setFailure(undefined),
                  (error: unknown) => setFailure(error instanceof Error ? error.message : String(error))
                )}
            >
              {key.enabled ? "Disable" : "Enable"}
            </button>
          )} {props.canDelete && <ConfirmDelete what={key.id} onConfirm={props.onDelete} />}
          {failure !== undefined && <span class="error" role="alert">{failure}</span>}
        </td>
      )}
    </tr>
  )
}

/** The keys section; `onUsage` opens the usage section at a view (its query string). */
export const Keys = (props: { session: Session; onUsage: (search: string) => void }) => {
  const { session } = props
  const apis = useApis(session)
  const [apiId, setApiId] = useSelection(apis, (api) => api.apiId, "apiId")
  const [externalId, setExternalId] = useState(() => param("externalId"))
  const [filter, setFilter] = useState(externalId)
  const [creating, setCreating] = useState(false)
  const [created, setCreated] = useState<{ keyId: string; secret: string } | undefined>()
  const [status, setStatus] = useState<string | undefined>()
  useSectionUrl("keys", { apiId, externalId })
  const list = usePagedList<Key>(
    session,
    apiId === "" ? undefined : `${apiId}/${externalId}`,
    (cursor) =>
      get<{ keys: ReadonlyArray<Key>; total: number; cursor?: string }>(session.rootKey, "apis.listKeys", {
        apiId,
        externalId: externalId === "" ? undefined : externalId,
        limit: String(PAGE),
        cursor
      }).then((page) => ({ ...page, items: page.keys })),
    `read the keys of api ${apiId}`
  )

  const canCreate = apiId !== "" && may(session, required.createKey(apiId))
  const canUpdate = apiId !== "" && may(session, required.updateKey(apiId))
  const canDelete = apiId !== "" && may(session, required.deleteKey(apiId))

  const create = async (input: Record<string, unknown>) => {
    const answer = await write<{ keyId: string; key?: string }>(
      session,
      "keys.createKey",
      input,
      `create keys in api ${apiId}`
    )
    if (answer === undefined) return
    setCreating(false)
    setCreated({ keyId: answer.keyId, secret: answer.key ?? "" })
    setStatus(undefined)
    list.reload()
  }
  const enable = async (key: Key, enabled: boolean) => {
    const body = { keyId: key.id, enabled }
    if (await write(session, "keys.updateKey", body, `update keys of api ${apiId}`) === undefined) return
    setStatus(`Key ${key.id} ${enabled ? "enabled" : "disabled"}.`)
    list.reload()
  }
  const remove = async (key: Key) => {
    const body = { keyId: key.id }
    if (await write(session, "keys.deleteKey", body, `delete keys of api ${apiId}`) === undefined) return
    setStatus(`Key ${key.id} deleted.`)
    list.reload(true)
  }

  return (
    <main>
      <h2 class="visually-hidden">Keys</h2>
      <form
        class="controls"
        onSubmit={(e) => {
          e.preventDefault()
          setExternalId(filter.trim())
          list.reset()
        }}
      >
        <Picker
          label="Api"
          name="apiId"
          value={apiId}
          items={apis.items?.map((api) => ({ id: api.apiId, text: `${api.name} (${api.apiId})` }))}
          onChange={(id) => {
            setApiId(id)
            list.reset()
            setCreating(false)
            setStatus(undefined)
          }}
        />
        <label>
          External id
          <input
            name="externalIdFilter"
            value={filter}
            maxLength={255}
            placeholder="all"
            onInput={(e) => setFilter((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit">Filter</button>
        {canCreate && !creating && (
          <button type="button" onClick={() => (setCreating(true), setCreated(undefined))}>New key</button>
        )}
      </form>
      {status !== undefined && <p class="status" role="status">{status}</p>}
      {created !== undefined && (
        <Secret
          keyId={created.keyId}
          secret={created.secret}
          onDone={() => setCreated(undefined)}
        />
      )}
      {creating && <CreateKeyForm apiId={apiId} onCreate={create} onCancel={() => setCreating(false)} />}
      {apis.error !== undefined && <p class="error" role="alert">{apis.error}</p>}
      {apiId === "" && apis.items !== undefined && apis.items.length === 0 && (
        <p class="empty">This key may read no api yet. Create one (apis.createApi) to issue keys in it.</p>
      )}
      {apiId !== "" && (
        <PagedTable
          label="keys"
          title={`Keys${externalId !== "" ? ` of ${externalId}` : ""}`}
          list={list}
          size={PAGE}
          empty={`${externalId !== "" ? `No keys of ${externalId} in this api.` : "No keys in this api yet."}${
            canCreate ? " Create one with New key." : ""
          }`}
          headers={[
            "key",
            "name",
            "external id",
            "state",
            "credits",
            "expires",
            "created",
            ...(canUpdate || canDelete ? ["actions"] : [])
          ]}
          row={(key) => (
            <KeyRow
              apiId={apiId}
              onUsage={props.onUsage}
              key={key.id}
              item={key}
              canUpdate={canUpdate}
              canDelete={canDelete}
              onEnable={(enabled) => enable(key, enabled)}
              onDelete={() => remove(key)}
            />
          )}
        />
      )}
    </main>
  )
}
