/**
 * keymeter's dashboard: the page and its assets, served beside the /v1 routes.
 */
export * as Dashboard from "./Dashboard.js"
