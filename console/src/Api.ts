/**
 * Every call the console makes: a request to this origin's API with the caller's bearer token.
 * A refusal is kept as the API stated it (status and tagged body), for `Refusal.ts` to show.
 */
import * as Session from "./Session.js"

export interface Answer {
  readonly ok: boolean
  readonly status: number
  // biome-ignore lint/suspicious/noExplicitAny: the API's JSON, read by the page that asked for it
  readonly body: any
}

export const call = async (
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  body?: unknown,
): Promise<Answer> => {
  const headers: Record<string, string> = { accept: "application/json" }
  const token = Session.token()
  if (token !== null) headers.authorization = `Bearer ${token}`
  if (body !== undefined) headers["content-type"] = "application/json"
  let response: Response
  try {
    response = await fetch(path, {
      method,
      headers,
      cache: "no-store",
      // The token is the only credential; nothing ambient rides along.
      credentials: "omit",
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
  } catch (error) {
    return { ok: false, status: 0, body: { _tag: "NetworkError", message: String(error) } }
  }
  const text = await response.text()
  let parsed: unknown = null
  try {
    parsed = text === "" ? null : JSON.parse(text)
  } catch {
    parsed = { _tag: "NotJson", message: text.slice(0, 200) }
  }
  return { ok: response.ok, status: response.status, body: parsed }
}

export const get = (path: string): Promise<Answer> => call("GET", path)

/** `encodeURIComponent` for a path segment. */
export const seg = (id: string): string => encodeURIComponent(id)
