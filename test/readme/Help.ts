/** What `agentplane --help` and `agentplane <verb> --help` list, read from their text. */

/** The verbs of `agentplane --help`: the first word of each line under `Commands:`. */
export const verbsOf = (text: string): ReadonlyArray<string> => {
  const lines = text.split("\n")
  const start = lines.findIndex((line) => line.trim() === "Commands:")
  const out: Array<string> = []
  for (const line of lines.slice(start + 1)) {
    const verb = /^ {2}([a-z][a-z-]*)\s/.exec(line)?.[1]
    if (verb === undefined) break
    out.push(verb)
  }
  return out
}

/** The flags a verb's help lists under `Flags:`, aliases included (`--store, --database-url text`). */
export const flagsOf = (text: string): ReadonlyArray<string> =>
  text
    .split("\n")
    .filter((line) => /^ {2}--/.test(line))
    .flatMap((line) => [...(line.split(/\s(?=[a-z<])/)[0] ?? "").matchAll(/--[a-z][a-z-]*/g)].map((m) => m[0]))
