/**
 * Reads of the catalog reused while its `revision` holds (see `Catalog.revision`): the request
 * paths read the same namespaces again and again, and a read through an adapter costs far more
 * than the work around it. Without a revision every decision reads the catalog again: what a load
 * brings is kept for the one lookup that follows it.
 */
import * as Effect from "effect/Effect"
import { Missing } from "../Decision.js"

/** Entries kept at most; past it they are all dropped. */
const MAX_ENTRIES = 10_000

export class CatalogCache<A> {
  private readonly entries = new Map<string, { readonly revision: number | undefined; readonly value: A }>()
  constructor(private readonly revision: (() => number) | undefined) {}

  /** The value remembered for `key`, or what loads it with `read` (see `Decision`). */
  lookup<E, R>(key: string, read: () => Effect.Effect<A, E, R>): A | Missing<E, R> {
    const revision = this.revision?.()
    const hit = this.entries.get(key)
    if (hit !== undefined) {
      if (revision === undefined) {
        this.entries.delete(key)
        return hit.value
      }
      if (hit.revision === revision) return hit.value
    }
    return new Missing(Effect.map(read(), (value) => {
      if (this.entries.size >= MAX_ENTRIES) this.entries.clear()
      this.entries.set(key, { revision, value })
    }))
  }
}
