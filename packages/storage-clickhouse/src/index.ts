/**
 * keymeter's ClickHouse storage adapter: the verification half of the Storage port.
 */
export * as ClickhouseVerificationStore from "./ClickhouseVerificationStore.js"
export * as Migrations from "./Migrations.js"
