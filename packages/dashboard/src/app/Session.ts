/**
 * The signed-in root key and what it may do, as `auth.whoami` answers: the page offers a write
 * control only when the key holds a permission for it (the server checks again).
 */
import { allows } from "@keymeter/core/Permission"
import { explain, isRefused, post } from "./Client.js"

export interface Session {
  readonly rootKey: string
  readonly permissions: ReadonlyArray<string>
  /** Back to sign-in, with the reason shown there. */
  readonly signOut: (why?: string) => void
}

/** True when the key holds `*` or any of `anyOf`. */
export const may = (session: Session, anyOf: ReadonlyArray<string>) => allows(session.permissions, anyOf)

/** True when the key holds any permission of a kind (`api`, `ratelimit`) for some resource. */
export const mayAny = (session: Session, kind: string, action: string) =>
  session.permissions.some((p) => p === "*" || (p.startsWith(`${kind}.`) && p.endsWith(`.${action}`)))

/** Signs out on a refused key (401) and answers true; any other error is the caller's to show. */
export const signedOut = (session: Session, error: unknown): boolean => {
  if (!isRefused(error)) return false
  session.signOut(`This key was refused: ${error.message}`)
  return true
}

/**
 * A write through a POST route: undefined when the key was refused (the page signs out), an
 * Error in plain words for the control that asked on any other failure.
 */
export const write = async <A>(
  session: Session,
  route: string,
  body: unknown,
  forbidden: string
): Promise<A | undefined> => {
  try {
    return await post<A>(session.rootKey, route, body)
  } catch (error) {
    if (signedOut(session, error)) return undefined
    throw new Error(explain(error, forbidden))
  }
}
