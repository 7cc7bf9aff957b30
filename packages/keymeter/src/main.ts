#!/usr/bin/env node
/**
 * The standalone server: `npm start`. Configured by environment (see ServerConfig); stops cleanly on
 * SIGINT/SIGTERM, letting in-flight requests finish.
 */
import { NodeRuntime } from "@effect/platform-node"
import { RecorderDelay } from "@keymeter/core/Recorder"
import { Dashboard } from "@keymeter/dashboard"
import * as Server from "@keymeter/http/Server"
import * as ConfigError from "effect/ConfigError"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as ServerHeap from "./internal/ServerHeap.js"
import * as ServerConfig from "./ServerConfig.js"
import * as Startup from "./Startup.js"
import * as StorageSpec from "./StorageSpec.js"

ServerHeap.tune()

/** `PORT: Expected an integer value but received "x"; ...`: each bad variable named. */
const describeConfigError = (error: ConfigError.ConfigError): string =>
  error._op === "And" || error._op === "Or"
    ? `${describeConfigError(error.left)}; ${describeConfigError(error.right)}`
    : `${error.path.join(".")}: ${error.message}`

const Main = Layer.unwrapEffect(
  Effect.gen(function*() {
    const config = yield* ServerConfig.config
    const spec = StorageSpec.parse(config.storage)
    if (spec instanceof StorageSpec.InvalidStorageSpec) return yield* spec
    const spool = Option.getOrUndefined(config.analyticsSpool)
    const analytics = Option.isSome(config.analytics)
      ? StorageSpec.parseAnalytics(config.analytics.value, spool)
      : spool === undefined
      ? undefined
      : new StorageSpec.InvalidStorageSpec({ message: "KEYMETER_ANALYTICS_SPOOL goes with KEYMETER_ANALYTICS" })
    if (analytics instanceof StorageSpec.InvalidStorageSpec) return yield* analytics
    const ratelimit = Option.isSome(config.ratelimit)
      ? StorageSpec.parseRatelimit(config.ratelimit.value, config.ratelimitFallback)
      : undefined
    if (ratelimit instanceof StorageSpec.InvalidStorageSpec) return yield* ratelimit
    return Server.layer({
      ...config,
      pages: Dashboard.make(),
      recordDelayMs: Option.getOrElse(
        config.recordDelayMs,
        () => analytics?._tag === "clickhouse" ? StorageSpec.CLICKHOUSE_RECORD_DELAY_MS : RecorderDelay.defaultValue()
      ),
      ...(ratelimit !== undefined ? { windows: StorageSpec.windowsLayer(ratelimit) } : {})
    }).pipe(
      Layer.provide(Layer.effectDiscard(Startup.run(config.provision))),
      Layer.provide(StorageSpec.layer(spec, { hotDays: config.hotDays, analytics, sqlWorker: config.sqlWorker }))
    )
  })
)

Layer.launch(Main).pipe(
  Effect.catchAll((error) =>
    Effect.zipRight(
      Console.error(`keymeter: ${
        ConfigError.isConfigError(error)
          ? describeConfigError(error)
          : "message" in error && error.message
          ? error.message
          : String(error)
      }`),
      Effect.sync(() => {
        process.exitCode = 1
      })
    )
  ),
  NodeRuntime.runMain
)
