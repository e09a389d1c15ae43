/**
 * Builds DOM nodes from data. Text always goes in as text (`textContent`, never HTML), so nothing
 * a task's justification or a case's state holds can become markup or script.
 */
export type Child = Node | string | number | null | undefined | false | ReadonlyArray<Child>

export interface Props {
  readonly [attribute: string]: string | boolean | undefined | ((event: Event) => void)
}

/** `<tag ...props>children</tag>`; a function prop `onX` listens to event `x`, `true` sets a bare attribute. */
export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props = {},
  ...children: ReadonlyArray<Child>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(props)) {
    if (typeof value === "function") element.addEventListener(name.slice(2).toLowerCase(), value)
    else if (value === true) element.setAttribute(name, "")
    else if (typeof value === "string") element.setAttribute(name, value)
  }
  append(element, children)
  return element
}

const append = (parent: Node, children: ReadonlyArray<Child>): void => {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(parent, child)
    else parent.appendChild(child instanceof Node ? child : document.createTextNode(String(child)))
  }
}

/** A definition list of label/value pairs, skipping absent values. */
export const facts = (rows: ReadonlyArray<readonly [string, Child]>): HTMLDListElement =>
  h(
    "dl",
    { class: "facts" },
    rows
      .filter(([, value]) => value !== null && value !== undefined)
      .map(([label, value]) => [h("dt", {}, label), h("dd", {}, value)]),
  )

/** JSON shown as indented text. */
export const json = (value: unknown): HTMLPreElement => h("pre", {}, JSON.stringify(value, null, 2))

/** Appends `children` to `parent`, skipping absent ones. */
export const add = (parent: Element, ...children: ReadonlyArray<Child>): void => append(parent, children)

/** Replaces `parent`'s children. */
export const fill = (parent: Element, ...children: ReadonlyArray<Child>): void => {
  parent.replaceChildren()
  append(parent, children)
}

/** Says `text` to screen readers through the page's polite live region. */
export const announce = (text: string): void => {
  const region = document.getElementById("announce")
  if (region !== null) region.textContent = text
}
