/**
 * The keys verification reads, by hash, and their identities, by id: remembered while the catalog
 * holds (its `revision`), including hashes no key has (so a guessed secret is refused as cheaply
 * as a known one is accepted). Bounded: past `capacity` keys (or `unknownCapacity` unknown
 * hashes), the oldest remembered is forgotten first.
 *
 * Without a revision, what a load brings serves the one lookup that follows it.
 *
 * The `Keys` service's own writes forget just what they change and then `adopt` the catalog's new
 * revision, so creating or updating one key does not make every other key be read again; any
 * other catalog change (an override, an api, another process's write) forgets everything, as the
 * revision says.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as CatalogPart from "../CatalogPart.js"
import { Missing } from "../Decision.js"
import type { Identity, Key } from "../Key.js"
import type { Role } from "../Role.js"
import { Catalog } from "../Storage.js"

/** How many keys verification keeps in memory (the unknown hashes kept are a tenth of it). */
export class KeyCacheCapacity extends Context.Reference<KeyCacheCapacity>()("@keymeter/core/KeyCacheCapacity", {
  defaultValue: () => 1_048_576
}) {}

const remember = <A>(map: Map<string, A>, capacity: number, key: string, value: A) => {
  if (map.size >= capacity && !map.has(key)) map.delete(map.keys().next().value!)
  map.set(key, value)
}

/** What {@link KeyCache} holds: keys by hash and identities by id. */
export class KeyMemory {
  // The catalog's answers as they came (no allocation per hit).
  private readonly keys = new Map<string, Option.Option<Key>>()
  private readonly unknown = new Set<string>()
  private readonly identities = new Map<string, Option.Option<Identity>>()
  private readonly roles = new Map<string, Option.Option<Role>>()
  /** The catalog revision everything remembered was read at. */
  private stamp: number | undefined = undefined
  /** Moves whenever something is forgotten: a read that started before does not store its value. */
  private generation = 0
  private readonly unknownCapacity: number

  constructor(private readonly revision: (() => number) | undefined, private readonly capacity: number) {
    this.unknownCapacity = Math.max(1, Math.floor(capacity / 10))
  }

  /** The current revision when what is remembered still holds (forgetting it all otherwise). */
  private current(): number | undefined {
    const revision = this.revision?.()
    if (revision !== undefined && revision !== this.stamp) {
      this.keys.clear()
      this.unknown.clear()
      this.identities.clear()
      this.roles.clear()
      this.stamp = revision
      this.generation++
    }
    return revision
  }

  /** The key of `hash` (none: no key has it) when remembered, or what loads it with `read`. */
  lookupKey<E, R>(
    hash: string,
    read: () => Effect.Effect<Option.Option<Key>, E, R>
  ): Option.Option<Key> | Missing<E, R> {
    const revision = this.current()
    const key = this.keys.get(hash)
    if (key !== undefined) {
      if (revision === undefined) this.keys.delete(hash)
      return key
    }
    if (this.unknown.has(hash)) {
      if (revision === undefined) this.unknown.delete(hash)
      return Option.none()
    }
    const generation = this.generation
    return new Missing(Effect.map(read(), (found) => {
      if (generation !== this.generation) return
      if (Option.isSome(found)) remember(this.keys, this.capacity, hash, found)
      else {
        if (this.unknown.size >= this.unknownCapacity) this.unknown.delete(this.unknown.values().next().value!)
        this.unknown.add(hash)
      }
    }))
  }

  /** The identity `id` (none: no such identity) when remembered, or what loads it with `read`. */
  lookupIdentity<E, R>(
    id: string,
    read: () => Effect.Effect<Option.Option<Identity>, E, R>
  ): Option.Option<Identity> | Missing<E, R> {
    return this.lookupIn(this.identities, id, read)
  }

  /** The role `id` (none: no such role) when remembered, or what loads it with `read`. */
  lookupRole<E, R>(
    id: string,
    read: () => Effect.Effect<Option.Option<Role>, E, R>
  ): Option.Option<Role> | Missing<E, R> {
    return this.lookupIn(this.roles, id, read)
  }

  /** An entry of `map` by id when remembered, or what loads it into `map` with `read`. */
  private lookupIn<A, E, R>(
    map: Map<string, Option.Option<A>>,
    id: string,
    read: () => Effect.Effect<Option.Option<A>, E, R>
  ): Option.Option<A> | Missing<E, R> {
    const revision = this.current()
    const found = map.get(id)
    if (found !== undefined) {
      if (revision === undefined) map.delete(id)
      return found
    }
    const generation = this.generation
    return new Missing(Effect.map(read(), (loaded) => {
      if (generation === this.generation) remember(map, this.capacity, id, loaded)
    }))
  }

  /**
   * Runs `write` (a change of the keys of `hashes` or of the identity `identityId`, nothing else),
   * then forgets what it changed; when nothing else changed the catalog since what is remembered
   * was read, the rest stays remembered.
   */
  write<A, E, R>(
    change: { readonly hashes?: ReadonlyArray<string>; readonly identityId?: string | undefined },
    write: Effect.Effect<A, E, R>
  ): Effect.Effect<A, E, R> {
    return Effect.suspend(() => {
      const before = this.current()
      return Effect.ensuring(
        write,
        Effect.sync(() => {
          this.generation++
          for (const hash of change.hashes ?? []) {
            this.keys.delete(hash)
            this.unknown.delete(hash)
          }
          if (change.identityId !== undefined) this.identities.delete(change.identityId)
          const after = this.revision?.()
          // Moved on only from the stamp it read before. A key or identity written by something
          // other than Keys while this write runs would be missed; in a process only Keys writes them.
          if (before !== undefined && this.stamp === before && after !== undefined) this.stamp = after
        })
      )
    })
  }
}

/** The keys and identities remembered, one for the services that read and write keys. */
export class KeyCache extends Context.Tag("@keymeter/core/KeyCache")<KeyCache, KeyMemory>() {
  static readonly layer: Layer.Layer<KeyCache, never, Catalog> = Layer.effect(
    KeyCache,
    Effect.gen(function*() {
      const catalog = yield* Catalog
      return new KeyMemory(CatalogPart.revisionOf(catalog, "keys"), yield* KeyCacheCapacity)
    })
  )
}
