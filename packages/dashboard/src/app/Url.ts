/**
 * The view in the URL: a section's parameters are read once when it opens and written back
 * (replacing the entry) as they change, so a view can be bookmarked; the root key never is.
 */
import { useEffect } from "preact/hooks"

/** A parameter of the page's URL, "" when absent. */
export const param = (name: string) => new URLSearchParams(location.search).get(name) ?? ""

/** The query of a section's view: `section` and the given parameters (empty ones left out). */
export const sectionSearch = (section: string, params: Record<string, string>) => {
  const search = new URLSearchParams({ section })
  for (const [name, value] of Object.entries(params)) if (value !== "") search.set(name, value)
  return `?${search}`
}

/** Keeps the URL at `section` and the given parameters (empty ones left out). */
export const useSectionUrl = (section: string, params: Record<string, string>) => {
  useEffect(() => {
    const search = sectionSearch(section, params)
    if (location.search !== search) history.replaceState(null, "", `${location.pathname}${search}`)
  }, Object.values(params))
}
