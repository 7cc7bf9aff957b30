/**
 * Keys made of two strings, for maps and cursors: an id (a workspace's, a namespace's, an api's),
 * then a name, an identifier or another id, joined by NUL. Ids never hold NUL, so the first NUL
 * ends the first part and two different pairs never make the same key, whatever the second holds.
 */
const SEPARATOR = "\u0000"

/** The key of the pair (`id`, `rest`). */
export const make = (id: string, rest: string): string => id + SEPARATOR + rest

/** The pair a key was made of; undefined when `key` holds no NUL. */
export const split = (key: string): readonly [id: string, rest: string] | undefined => {
  const at = key.indexOf(SEPARATOR)
  return at < 0 ? undefined : [key.slice(0, at), key.slice(at + 1)]
}
