/**
 * The dashboard page: sign in with a root key (kept in sessionStorage only), then the sections
 * this key may see — usage, rate limits, keys, SQL queries. Every number comes from the public
 * /v1 routes, or v2's SQL analytics, called with the key; the view lives in the URL, never the key.
 */
import { render } from "preact"
import { useEffect, useState } from "preact/hooks"
import { explain, get, isRefused } from "./Client.js"
import { Keys } from "./Keys.js"
import { Query, queryFamilies } from "./Query.js"
import { RateLimits } from "./RateLimits.js"
import { mayAny, type Session } from "./Session.js"
import { Usage } from "./Usage.js"

const KEY = "keymeter.rootKey"

const SECTIONS = [
  ["usage", "Usage"],
  ["ratelimits", "Rate limits"],
  ["keys", "Keys"],
  ["query", "Query"]
] as const
type Section = typeof SECTIONS[number][0]

const sectionOf = (): Section => {
  const section = new URLSearchParams(location.search).get("section")
  return SECTIONS.some(([name]) => name === section) ? section as Section : "usage"
}

/**
 * The sections a key may open: rate limits with any override read, keys with any key read,
 * queries with any analytics read (an api's, or rate limits').
 */
const shown = (session: Session): ReadonlyArray<Section> => [
  "usage",
  ...(mayAny(session, "ratelimit", "read_override") ? ["ratelimits" as const] : []),
  ...(mayAny(session, "api", "read_key") ? ["keys" as const] : []),
  ...(queryFamilies(session).length > 0 ? ["query" as const] : [])
]

const SignIn = (props: { onKey: (key: string) => void; message?: string | undefined }) => {
  const [value, setValue] = useState("")
  return (
    <main class="signin">
      <h1>keymeter</h1>
      <form
        onSubmit={(event) => {
          event.preventDefault()
          if (value.trim() !== "") props.onKey(value.trim())
        }}
      >
        <label>
          Root key
          <input
            type="password"
            name="rootKey"
            autocomplete="off"
            required
            value={value}
            onInput={(e) => setValue((e.target as HTMLInputElement).value)}
          />
        </label>
        {props.message !== undefined && <p class="error" role="alert">{props.message}</p>}
        <button type="submit">Sign in</button>
      </form>
      <p class="empty">The key stays in this tab (sessionStorage) and is sent only to this server.</p>
    </main>
  )
}

const App = () => {
  const [rootKey, setRootKey] = useState(() => sessionStorage.getItem(KEY) ?? undefined)
  const [message, setMessage] = useState<string | undefined>()
  const [permissions, setPermissions] = useState<ReadonlyArray<string> | undefined>()
  const [section, setSection] = useState(sectionOf)
  const signOut = (why?: string) => {
    sessionStorage.removeItem(KEY)
    setMessage(why)
    setPermissions(undefined)
    setRootKey(undefined)
  }
  useEffect(() => {
    if (rootKey === undefined) return
    get<{ permissions: ReadonlyArray<string> }>(rootKey, "auth.whoami").then(
      (me) => setPermissions(me.permissions),
      (error: unknown) =>
        signOut(isRefused(error) ? `This key was refused: ${error.message}` : explain(error, "sign in"))
    )
  }, [rootKey])
  // Back and forward move between sections too.
  useEffect(() => {
    const back = () => setSection(sectionOf())
    addEventListener("popstate", back)
    return () => removeEventListener("popstate", back)
  }, [])
  if (rootKey === undefined) {
    return (
      <SignIn
        message={message}
        onKey={(key) => {
          sessionStorage.setItem(KEY, key)
          setMessage(undefined)
          setRootKey(key)
        }}
      />
    )
  }
  const session: Session | undefined = permissions === undefined ? undefined : { rootKey, permissions, signOut }
  const sections = session === undefined ? [] : shown(session)
  const open = sections.includes(section) ? section : "usage"
  return (
    <>
      <header>
        <h1>keymeter</h1>
        <nav aria-label="sections">
          {SECTIONS.filter(([name]) => sections.includes(name)).map(([name, label]) => (
            <a
              key={name}
              href={`?section=${name}`}
              aria-current={name === open ? "page" : undefined}
              onClick={(event) => {
                event.preventDefault()
                if (name === open) return
                history.pushState(null, "", `${location.pathname}${name === "usage" ? "" : `?section=${name}`}`)
                setSection(name)
              }}
            >
              {label}
            </a>
          ))}
        </nav>
        <button type="button" onClick={() => signOut()}>Sign out</button>
      </header>
      {session === undefined
        ? <p class="empty" aria-live="polite">Checking the key…</p>
        : open === "ratelimits"
        ? <RateLimits session={session} />
        : open === "query"
        ? <Query session={session} families={queryFamilies(session)} />
        : open === "keys"
        ? (
          <Keys
            session={session}
            onUsage={(search) => {
              history.pushState(null, "", `${location.pathname}?${search}`)
              setSection("usage")
            }}
          />
        )
        : <Usage session={session} />}
    </>
  )
}

render(<App />, document.getElementById("app")!)
