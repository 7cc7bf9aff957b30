/**
 * The keys verification reads, by hash, and their identities, by id: remembered while the catalog
 * holds (its `revision`), including hashes no key has (so a guessed secret is refused as cheaply
 * as a known one is accepted). Bounded: past `capacity` keys (or `unknownCapacity` unknown
 * hashes), the oldest remembered is forgotten first.
 *
 * The `Keys` service's own writes forget just what they change and then `adopt` the catalog's new
 * revision, so creating or updating one key does not make every other key be read again; any
 * other catalog change (an override, an api, another process's write) forgets everything, as the
 * revision says.
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Identity, Key } from "../Key.js"

/** How many keys verification keeps in memory (the unknown hashes kept are a tenth of it). */
export class KeyCacheCapacity extends Context.Reference<KeyCacheCapacity>()("@keymeter/core/KeyCacheCapacity", {
  defaultValue: () => 1_048_576
}) {}

const remember = <A>(map: Map<string, A>, capacity: number, key: string, value: A) => {
  if (map.size >= capacity && !map.has(key)) map.delete(map.keys().next().value!)
  map.set(key, value)
}

export class KeyCache {
  private readonly keys = new Map<string, Key>()
  private readonly unknown = new Set<string>()
  private readonly identities = new Map<string, Identity | null>()
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
      this.stamp = revision
      this.generation++
    }
    return revision
  }

  /** The key of `hash` (null: no key has it) when remembered; undefined when it must be read. */
  peekKey(hash: string): Key | null | undefined {
    if (this.current() === undefined) return undefined
    return this.keys.get(hash) ?? (this.unknown.has(hash) ? null : undefined)
  }

  /** The identity `id` (null: none) when remembered; undefined when it must be read. */
  peekIdentity(id: string): Identity | null | undefined {
    if (this.current() === undefined) return undefined
    return this.identities.get(id)
  }

  /** The key of `hash`, from memory or from `read` (then remembered). */
  key<E, R>(hash: string, read: Effect.Effect<Option.Option<Key>, E, R>): Effect.Effect<Option.Option<Key>, E, R> {
    return Effect.suspend(() => {
      const known = this.peekKey(hash)
      if (known !== undefined) return Effect.succeed(Option.fromNullable(known))
      const generation = this.generation
      return Effect.map(read, (found) => {
        if (this.stamp !== undefined && generation === this.generation) {
          if (Option.isSome(found)) remember(this.keys, this.capacity, hash, found.value)
          else {
            if (this.unknown.size >= this.unknownCapacity) this.unknown.delete(this.unknown.values().next().value!)
            this.unknown.add(hash)
          }
        }
        return found
      })
    })
  }

  /** The identity `id`, from memory or from `read` (then remembered). */
  identity<E, R>(
    id: string,
    read: Effect.Effect<Option.Option<Identity>, E, R>
  ): Effect.Effect<Option.Option<Identity>, E, R> {
    return Effect.suspend(() => {
      const known = this.peekIdentity(id)
      if (known !== undefined) return Effect.succeed(Option.fromNullable(known))
      const generation = this.generation
      return Effect.map(read, (found) => {
        if (this.stamp !== undefined && generation === this.generation) {
          remember(this.identities, this.capacity, id, Option.getOrNull(found))
        }
        return found
      })
    })
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
