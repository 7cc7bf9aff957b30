/**
 * keymeter's rate-limit windows in Redis, shared by several servers.
 */
export * as RedisWindows from "./RedisWindows.js"
