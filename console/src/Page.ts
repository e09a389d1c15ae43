/** What a page is: it draws itself into `main` and may return a stop for what it keeps running (polling). */
export interface Context {
  readonly main: HTMLElement
  /** The route's parameters: path segments after the page's name, and the hash's query. */
  readonly segments: ReadonlyArray<string>
  readonly query: URLSearchParams
  /** Whether this page is still the one shown: a late answer for a page left behind is dropped. */
  readonly current: () => boolean
}

export type Stop = () => void

export type Page = (context: Context) => Promise<Stop | undefined>

/** The page's title (document and heading), focused so a screen reader announces the new page. */
export const title = (text: string): HTMLHeadingElement => {
  document.title = `${text} · agentplane console`
  const heading = document.createElement("h1")
  heading.textContent = text
  heading.tabIndex = -1
  return heading
}
