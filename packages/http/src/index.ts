/**
 * keymeter over HTTP: the /v1 and /v2 contracts, their handlers, the error envelopes, docs, and
 * the server layers. The standalone server and the promise facade are in the `keymeter` package.
 */
export * as Api from "./Api.js"
export * as AuthGate from "./AuthGate.js"
export * as Authorization from "./Authorization.js"
export * as Docs from "./Docs.js"
export * as Errors from "./Errors.js"
export * as Fallback from "./Fallback.js"
export * as NodeServer from "./NodeServer.js"
export * as RequestContext from "./RequestContext.js"
export * as SafeHeaders from "./SafeHeaders.js"
export * as Server from "./Server.js"
export * as V1Api from "./v1/Api.js"
export * as V1Handlers from "./v1/Handlers.js"
export * as V2Api from "./v2/Api.js"
export * as V2Handlers from "./v2/Handlers.js"
