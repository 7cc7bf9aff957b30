/**
 * The namespace a rate-limit request limits in, as `RateLimiter` finds it: by id (which must
 * exist) or by name (created on first use, which needs `ratelimit.*.limit`), once the caller may
 * limit there. Lookups, in the sense of `Decision`.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type { Auth } from "../Auth.js"
import * as Decision from "../Decision.js"
import { Missing } from "../Decision.js"
import type { InsufficientPermissions, StorageError } from "../Errors.js"
import { NotFound, ValidationError } from "../Errors.js"
import * as Ids from "../Ids.js"
import type { LimitRequest } from "../Limit.js"
import { DEFAULT_NAMESPACE } from "../Limit.js"
import { isPattern, Namespace } from "../Namespace.js"
import type { Principal } from "../Permission.js"
import * as Permission from "../Permission.js"
import type { Catalog } from "../Storage.js"
import { NamespaceReads } from "./NamespaceReads.js"

/**
 * A lookup's miss that creates a namespace: `multiLimit` holds these back until every limit of
 * the call is known to be allowed, so a refused call creates nothing.
 */
export class Creation extends Missing<StorageError> {}

/** No permission to check: the caller did. */
export const allowed = (): Exit.Exit<void> => Exit.void

const PATTERN = "patterns name namespaces of overrides, not of requests"

const invalid = (at: string, message: string) => Exit.fail(new ValidationError({ message: at + message }))

export class LimitNamespaces {
  private readonly namespaces: NamespaceReads
  constructor(private readonly catalog: Catalog["Type"], private readonly auth: Auth["Type"]) {
    this.namespaces = new NamespaceReads(catalog)
  }

  /**
   * The workspace's namespace `name`, as a lookup; a name seen for the first time is created
   * (when `mayCreate` allows it: the caller's permission, checked only then), which is then what
   * is missing (a {@link Creation}).
   */
  named<E>(
    workspaceId: string,
    name: string,
    mayCreate: () => Exit.Exit<void, E>
  ): Option.Some<Namespace> | Missing<StorageError> | Exit.Exit<never, E> {
    const found = this.namespaces.namedOrWithId(workspaceId, name)
    // Named by its id, a pattern is no namespace to limit in: `name` is then a new one's name.
    if (
      found instanceof Missing ||
      (Option.isSome(found) && (found.value.name === name || !isPattern(found.value.name)))
    ) {
      return found
    }
    return Decision.failed(mayCreate()) ??
      new Creation(
        this.namespaces.created(workspaceId, name, Effect.map(this.create(workspaceId, name), Option.some)).load
      )
  }

  /**
   * The namespace a limit names, as a lookup, once the principal may limit there: by
   * `namespaceId` (which must exist), else by name (created on first use, which needs
   * `ratelimit.*.limit`). `at` starts the messages (`[2].` for an item of `multiLimit`).
   */
  of(
    principal: Principal,
    request: LimitRequest,
    at: string
  ):
    | Option.Some<Namespace>
    | Missing<StorageError>
    | Exit.Exit<never, ValidationError | NotFound | InsufficientPermissions>
  {
    const id = request.namespaceId
    if (id !== undefined) {
      if (request.namespace !== undefined) return invalid(at, "namespace: give namespace or namespaceId, not both")
      // Checked before the lookup, as it needs only the id: a caller that may not limit there
      // learns nothing of which ids exist.
      const denied = Decision.failed(this.auth.authorize(principal, Permission.required.limit(id)))
      if (denied !== undefined) return denied
      const found = this.namespaces.withId(principal.workspaceId, id)
      if (found instanceof Missing) return found
      if (Option.isNone(found)) {
        return Exit.fail(
          new NotFound({ message: `${at}namespaceId: no namespace ${JSON.stringify(id)} in this workspace` })
        )
      }
      // As for names: a pattern's window would be shared by the namespaces it matches.
      if (isPattern(found.value.name)) {
        return invalid(at, `namespaceId: names the pattern ${JSON.stringify(found.value.name)}; ${PATTERN}`)
      }
      return found
    }
    const name = request.namespace ?? DEFAULT_NAMESPACE
    if (isPattern(name)) return invalid(at, `namespace: must not contain *; ${PATTERN}`)
    const found = this.named(
      principal.workspaceId,
      name,
      () => this.auth.authorize(principal, Permission.required.limit("*"))
    )
    if (!Option.isOption(found)) return found
    return Decision.failed(this.auth.authorize(principal, Permission.required.limit(found.value.id))) ?? found
  }

  /** Creates the workspace's namespace `name` (or finds the one a concurrent call created). */
  private create(workspaceId: string, name: string) {
    return Effect.flatMap(
      Clock.currentTimeMillis,
      (now) =>
        this.catalog.ensureNamespace(new Namespace({ id: Ids.make(Ids.Prefix.namespace, now), workspaceId, name }))
    )
  }
}
