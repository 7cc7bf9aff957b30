/**
 * Page cursors of the list routes: opaque to callers (base64url) and bound to what they page, so a
 * cursor taken from one api's or namespace's listing is refused in another rather than paging it
 * from an unrelated place.
 */
import * as CompositeKey from "./internal/CompositeKey.js"

/** The cursor continuing after `after` in the listing of `scope`. */
export const encode = (scope: string, after: string): string =>
  Buffer.from(CompositeKey.make(scope, after), "utf8").toString("base64url")

/**
 * What a cursor holds: the listing it pages and the last id of the page before, when `text` is a
 * cursor this API gave with an id of the form `id`; null otherwise.
 */
export const decode = (text: string, id: RegExp): { readonly scope: string; readonly after: string } | null => {
  const pair = CompositeKey.split(Buffer.from(text, "base64url").toString("utf8"))
  if (pair === undefined) return null
  const [scope, after] = pair
  return scope !== "" && id.test(after) ? { scope, after } : null
}
