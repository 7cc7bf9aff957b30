/**
 * The pickers' lists: the apis and the namespaces this key may read, loaded once per section.
 * `undefined` while loading; an error other than a refused key leaves an empty list and a reason.
 */
import { useEffect, useState } from "preact/hooks"
import { explain, get } from "./Client.js"
import { type Session, signedOut } from "./Session.js"
import { param } from "./Url.js"

export interface Listed<A> {
  readonly items: ReadonlyArray<A> | undefined
  readonly error?: string | undefined
  /** Loads the list again (after this page added to it). */
  readonly reload: () => void
}

const useList = <A>(session: Session, load: () => Promise<ReadonlyArray<A>>, forbidden: string): Listed<A> => {
  const [listed, setListed] = useState<Omit<Listed<A>, "reload">>({ items: undefined })
  const [version, setVersion] = useState(0)
  useEffect(() => {
    load().then(
      (items) => setListed({ items }),
      (error: unknown) => {
        if (!signedOut(session, error)) setListed({ items: [], error: explain(error, forbidden) })
      }
    )
  }, [session.rootKey, version])
  return { ...listed, reload: () => setVersion((v) => v + 1) }
}

export interface ApiItem {
  readonly apiId: string
  readonly name: string
}

/** The apis this key may read (`apis.listApis`). */
export const useApis = (session: Session) =>
  useList<ApiItem>(
    session,
    () => get<{ apis: ReadonlyArray<ApiItem> }>(session.rootKey, "apis.listApis").then((list) => list.apis),
    "list apis"
  )

export interface NamespaceItem {
  readonly namespaceId: string
  readonly name: string
}

/** The namespaces whose overrides this key may read (`ratelimits.listNamespaces`). */
export const useNamespaces = (session: Session) =>
  useList<NamespaceItem>(
    session,
    () =>
      get<{ namespaces: ReadonlyArray<NamespaceItem> }>(session.rootKey, "ratelimits.listNamespaces").then((list) =>
        list.namespaces
      ),
    "list namespaces"
  )

/** A picked item's id, from the URL parameter, else the list's first once it is loaded. */
export const useSelection = <A>(listed: Listed<A>, idOf: (item: A) => string, name: string) => {
  const [value, setValue] = useState(() => param(name))
  useEffect(() => {
    const first = listed.items?.[0]
    if (first !== undefined) setValue((current) => (current === "" ? idOf(first) : current))
  }, [listed.items])
  return [value, setValue] as const
}
