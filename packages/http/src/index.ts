/**
 * keymeter over HTTP: the /v1 contract, its handlers, the standalone server, and the promise
 * facade for Node services that do not use Effect.
 */
export * as Api from "./Api.js"
export * as Authorization from "./Authorization.js"
export * as Docs from "./Docs.js"
export * as Embed from "./Embed.js"
export { createKeymeter, KeymeterError } from "./Embed.js"
export type { Keymeter, KeymeterOptions, VerificationsQuery } from "./Embed.js"
export * as Errors from "./Errors.js"
export * as Fallback from "./Fallback.js"
export * as Handlers from "./Handlers.js"
export * as RequestContext from "./RequestContext.js"
export * as Server from "./Server.js"
export * as ServerConfig from "./ServerConfig.js"
export * as Startup from "./Startup.js"
export * as StorageSpec from "./StorageSpec.js"
