/**
 * A keymeter server on 127.0.0.1 and a free port, over a given storage, with a provisioned
 * catalog; `fetchJson` talks to it over a real socket.
 */
import { NodeHttpServer } from "@effect/platform-node"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Provisioning from "@keymeter/core/Provisioning"
import type { Catalog, VerificationStore } from "@keymeter/core/Storage"
import * as NodeServer from "@keymeter/http/NodeServer"
import * as Server from "@keymeter/http/Server"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Every root key of the test workspaces, by role (provisioned secrets have at least 32 characters). */
export const keys = {
  admin: "sk_test_admin_k3ym3t3r_t3st_s3cr3t",
  reader: "sk_test_reader_k3ym3t3r_t3st_s3cr3t",
  readerOne: "sk_test_reader_one_k3ym3t3r_t3st_s3cr3t",
  recorder: "sk_test_recorder_k3ym3t3r_t3st_s3cr3t",
  recorderOne: "sk_test_recorder_one_k3ym3t3r_t3st_s3cr3t",
  setter: "sk_test_setter_k3ym3t3r_t3st_s3cr3t",
  setterOne: "sk_test_setter_one_k3ym3t3r_t3st_s3cr3t",
  creator: "sk_test_creator_k3ym3t3r_t3st_s3cr3t",
  overrideReader: "sk_test_override_reader_k3ym3t3r_t3st_s3cr3t",
  overrideReaderOne: "sk_test_override_reader_one_k3ym3t3r_t3st_s3cr3t",
  overrideDeleter: "sk_test_override_deleter_k3ym3t3r_t3st_s3cr3t",
  limiter: "sk_test_limiter_k3ym3t3r_t3st_s3cr3t",
  limiterOne: "sk_test_limiter_one_k3ym3t3r_t3st_s3cr3t",
  nothing: "sk_test_nothing_k3ym3t3r_t3st_s3cr3t",
  disabled: "sk_test_disabled_k3ym3t3r_t3st_s3cr3t",
  expired: "sk_test_expired_k3ym3t3r_t3st_s3cr3t",
  otherAdmin: "sk_test_other_admin_k3ym3t3r_t3st_s3cr3t",
  verifierOne: "sk_test_verifier_one_k3ym3t3r_t3st_s3cr3t",
  limitReaderOne: "sk_test_limit_reader_one_k3ym3t3r_t3st_s3cr3t"
} as const

export const provisioning: Provisioning.ProvisioningDocument = {
  workspaces: [
    {
      id: "ws_a",
      name: "A",
      rootKeys: [
        { key: keys.admin, permissions: ["*"] },
        { key: keys.reader, permissions: ["api.*.read_api"] },
        { key: keys.readerOne, permissions: ["api.api_a1.read_api"] },
        { key: keys.recorder, permissions: ["api.*.record_verifications"] },
        { key: keys.recorderOne, permissions: ["api.api_a1.record_verifications"] },
        { key: keys.setter, permissions: ["ratelimit.*.set_override"] },
        { key: keys.setterOne, permissions: ["ratelimit.rlns_a1.set_override"] },
        { key: keys.creator, permissions: ["api.*.create_api"] },
        { key: keys.overrideReader, permissions: ["ratelimit.*.read_override"] },
        { key: keys.overrideReaderOne, permissions: ["ratelimit.rlns_a1.read_override"] },
        { key: keys.overrideDeleter, permissions: ["ratelimit.*.delete_override"] },
        { key: keys.limiter, permissions: ["ratelimit.*.limit"] },
        { key: keys.limiterOne, permissions: ["ratelimit.rlns_a1.limit"] },
        { key: keys.nothing, permissions: [] },
        { key: keys.verifierOne, permissions: ["api.api_a1.verify_key"] },
        { key: keys.limitReaderOne, permissions: ["ratelimit.rlns_a1.read_analytics"] },
        { key: keys.disabled, permissions: ["*"], disabled: true },
        { key: keys.expired, permissions: ["*"], expiresAt: 1 }
      ],
      apis: [{ id: "api_a1", name: "one" }, { id: "api_a2", name: "two" }],
      namespaces: [{ id: "rlns_a1", name: "email" }, { id: "rlns_a2", name: "sms" }]
    },
    {
      id: "ws_b",
      name: "B",
      rootKeys: [{ key: keys.otherAdmin, permissions: ["*"] }],
      apis: [{ id: "api_b1", name: "one" }],
      namespaces: [{ id: "rlns_b1", name: "email" }]
    }
  ]
}

/** Where the test server listens. */
export class BaseUrl extends Context.Tag("test/BaseUrl")<BaseUrl, string>() {}

/** The server over `storage`, provisioned, on a free loopback port; the storage's services stay visible to tests. */
export const layer = <S>(
  storage: Layer.Layer<S | VerificationStore | Catalog, unknown>,
  options: Server.Options & NodeServer.Options & {
    /** false: the pipeline alone, without the fast lane (to compare the two). */
    readonly fastLane?: boolean
  } = {}
) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const server = NodeServer.make(options)
    return Layer.effect(
      BaseUrl,
      Effect.map(HttpServer.HttpServer, (server) => {
        const address = server.address as HttpServer.TcpAddress
        return `http://127.0.0.1:${address.port}`
      })
    ).pipe(
      Layer.provideMerge(options.fastLane === false ? Server.serve(options) : Server.serveNode(server, options)),
      Layer.provide(Layer.effectDiscard(Provisioning.apply(provisioning))),
      Layer.provide(NodeHttpServer.layer(() => server, { port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(storage)
    )
  }))

/** A response, its parsed JSON body (or text), and its headers. */
export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** Sends a request to the test server. */
export const request = (path: string, init: RequestInit & { readonly key?: string } = {}) =>
  Effect.gen(function*() {
    const base = yield* BaseUrl
    const { key, ...rest } = init
    const headers = new Headers(rest.headers)
    if (key !== undefined) headers.set("authorization", `Bearer ${key}`)
    return yield* Effect.promise(async (): Promise<Reply> => {
      const response = await fetch(base + path, { ...rest, headers })
      const text = await response.text()
      let body: unknown = text
      try {
        body = JSON.parse(text)
      } catch {
        // Not JSON: keep the text.
      }
      return { status: response.status, headers: response.headers, body }
    })
  })

/** POSTs `body` as JSON. */
export const post = (path: string, body: unknown, key?: string) =>
  request(path, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...(key !== undefined ? { key } : {})
  })
