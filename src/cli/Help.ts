/**
 * `agentplane --help` and `agentplane <verb> --help`, rendered here from the commands' own help
 * documents rather than by @effect/cli 0.77, whose page reads `$ serve` for the usage, calls
 * every flag with an environment fallback "optional" (so the required `--tokens` and `--policy`
 * read as optional), never shows a `withDefault` value, and writes ANSI escapes into a pipe.
 *
 * The page is plain text wherever it goes: help is read, grepped and pasted into tickets, and a
 * colour adds nothing to any of those. A flag's description says its default (`default …`) or
 * that it is `required`; a switch is off unless given. `test/cli/Help.test.ts` holds every verb
 * to that, so a flag added without saying its default fails there.
 */
import { CliConfig, Command, HelpDoc, type Span } from "@effect/cli"
import { Option } from "effect"

/** What the help page of the whole command names. */
export interface Program {
  readonly name: string
  readonly version: string
  readonly description: string
}

/** One flag as the help page shows it. */
export interface Flag {
  /** The flag's names and value, as `--store, --database-url text`. */
  readonly usage: string
  readonly description: string
  /** A switch takes no value: given, it is on. */
  readonly isSwitch: boolean
  readonly required: boolean
}

/** A verb's name, description and flags, read from its @effect/cli help document. */
export interface Verb {
  readonly name: string
  readonly description: string
  readonly flags: ReadonlyArray<Flag>
}

/** The verb `command` as its help page shows it. */
// biome-ignore lint/suspicious/noExplicitAny: a verb's environment, errors and arguments do not matter to its help
export const verb = (command: Command.Command<any, any, any, any>): Verb => {
  const doc = Command.getHelp(command, VERB_CONFIG)
  const [name = ""] = Command.getNames(command)
  return { name, description: sectionText(doc, "DESCRIPTION"), flags: flags(doc) }
}

/**
 * The verb whose help `args` (the arguments after the executable) ask for: `Some(None)` for the
 * whole command (`--help`, `-h`, or no argument at all), `Some(Some(verb))` for one verb,
 * `None` when no help is asked for. Nothing after a `--` is a flag.
 */
export const requested = (
  args: ReadonlyArray<string>,
  verbs: ReadonlyArray<string>,
): Option.Option<Option.Option<string>> => {
  const end = args.indexOf("--")
  const flagArgs = end === -1 ? args : args.slice(0, end)
  if (args.length > 0 && !flagArgs.some((arg) => arg === "--help" || arg === "-h")) return Option.none()
  const first = flagArgs[0]
  return Option.some(first !== undefined && verbs.includes(first) ? Option.some(first) : Option.none())
}

/** The page for the whole command: its verbs, one line each. */
export const renderProgram = (program: Program, verbs: ReadonlyArray<Verb>): string => {
  const width = Math.max(...verbs.map((v) => v.name.length)) + 2
  return [
    `${program.name} ${program.version}: ${program.description}`,
    "",
    `Usage: ${program.name} <command> [flags]`,
    "",
    "Commands:",
    ...verbs.map((v) => `  ${v.name.padEnd(width)}${v.description}`),
    "",
    `Run \`${program.name} <command> --help\` for a command's flags. Every flag can also be given by`,
    "the environment variable its description names.",
    BUILT_INS,
  ].join("\n")
}

/** The page for one verb: usage with its required flags, then every flag with its default. */
export const renderVerb = (program: Program, verb: Verb): string => {
  const required = verb.flags.filter((flag) => flag.required).map((flag) => primaryUsage(flag))
  const optional = verb.flags.some((flag) => !flag.required)
  return [
    `Usage: ${[program.name, verb.name, ...required, ...(optional ? ["[flags]"] : [])].join(" ")}`,
    "",
    verb.description,
    ...(verb.flags.length === 0
      ? []
      : ["", "Flags:", ...verb.flags.flatMap((flag) => [`  ${flag.usage}`, `      ${describe(flag)}`])]),
    "",
    BUILT_INS,
  ].join("\n")
}

// internal

/** A verb's own flags: the built-in ones (`--help`, `--version`, …) are listed once, on the page's last line. */
const VERB_CONFIG = CliConfig.make({ showBuiltIns: false })

/** @effect/cli's own flags, which every verb takes. */
const BUILT_INS = "Every command also takes --help (-h), --version and --completions <shell>."

/** The description as shown: a switch says it is off unless given, when its text does not. */
const describe = (flag: Flag): string =>
  flag.isSwitch && !/\bdefault\b/i.test(flag.description) ? `${flag.description}; off unless given` : flag.description

/** `--tokens text` for a flag whose usage is `--tokens text` or `--store, --database-url text`. */
const primaryUsage = (flag: Flag): string => flag.usage.replace(/^(--?[\w-]+)(?:, --?[\w-]+)*/, "$1")

const spanText = (span: Span.Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Highlight":
    case "Weak":
    case "Strong":
      return spanText(span.value)
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
  }
}

/** The blocks of a document in order, sequences flattened. */
const blocks = (doc: HelpDoc.HelpDoc): ReadonlyArray<HelpDoc.HelpDoc> =>
  doc._tag === "Sequence" ? [...blocks(doc.left), ...blocks(doc.right)] : doc._tag === "Empty" ? [] : [doc]

const paragraphs = (doc: HelpDoc.HelpDoc): ReadonlyArray<string> =>
  blocks(doc).flatMap((block) => (block._tag === "Paragraph" ? [spanText(block.value)] : []))

/** The paragraphs under the level-1 header `title`, joined. */
const sectionText = (doc: HelpDoc.HelpDoc, title: string): string => {
  const all = blocks(doc)
  const start = all.findIndex((block) => block._tag === "Header" && spanText(block.value) === title)
  if (start === -1) return ""
  const after = all.slice(start + 1)
  const end = after.findIndex((block) => block._tag === "Header")
  return paragraphs(HelpDoc.blocks(end === -1 ? after : after.slice(0, end))).join(" ")
}

/**
 * The sentences @effect/cli adds to every flag, which this page replaces: the value's type
 * (always the first paragraph), that an environment variable can set it (the description names
 * the variable) and that it is optional (the description says its default, or that it is
 * required).
 */
const LIBRARY_SENTENCE = /^(This option can be set from environment variables\.|This setting is optional\.)/

const flags = (doc: HelpDoc.HelpDoc): ReadonlyArray<Flag> =>
  blocks(doc).flatMap((block) =>
    block._tag === "DescriptionList"
      ? block.definitions.map(([span, body]): Flag => {
          const [type = "", ...rest] = paragraphs(body)
          const description = rest.filter((text) => !LIBRARY_SENTENCE.test(text)).join(" ")
          return {
            usage: spanText(span).replace(/^\((.*)\)$/, "$1"),
            description,
            isSwitch: type === "A true or false value.",
            required: /\brequired\b/i.test(description),
          }
        })
      : [],
  )
