/**
 * keymeter, the package to install: the promise facade for Node services (`createKeymeter`, the
 * mountable handler), and the standalone server's configuration, storage selection and start-up.
 */
export * as Embed from "./Embed.js"
export { createKeymeter, KeymeterError } from "./Embed.js"
export type { Keymeter, KeymeterOptions, VerificationsQuery } from "./Embed.js"
export * as ServerConfig from "./ServerConfig.js"
export * as Startup from "./Startup.js"
export * as StorageSpec from "./StorageSpec.js"
