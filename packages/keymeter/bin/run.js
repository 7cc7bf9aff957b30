/* global console, process, URL */
// Runs a built entry of dist/, or says in one line how to build it.
export const run = async (entry) => {
  const url = new URL(`../dist/${entry}`, import.meta.url)
  try {
    await import(url.href)
  } catch (error) {
    if (error?.code === "ERR_MODULE_NOT_FOUND" && String(error.message).includes(url.pathname)) {
      console.error(`keymeter: ${url.pathname} is not built; run \`npm ci\` (or \`npm run prepare\`) first`)
      process.exit(1)
    }
    throw error
  }
}
