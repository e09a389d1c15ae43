/**
 * Spawning the archive verbs as an operator runs them: the shared CLI support
 * (`test/support/Cli.ts`, a real process on a store of each backend made for the test), plus the
 * one thing only the archive verbs need, a run under a pseudo-terminal to see their progress.
 */
import { spawn } from "node:child_process"
import { env, type Finished } from "../support/Cli.js"

export { cleanUp, cli, type Finished, postgres, type Store, scratchFile, sqlite, start } from "../support/Cli.js"

/**
 * The CLI under a pseudo-terminal (util-linux `script`), so standard error is a TTY as it is for
 * a person; what the terminal showed comes back as `stdout`.
 */
export const onTerminal = (args: ReadonlyArray<string>): Promise<Finished> => {
  const command = [process.execPath, "--import", "tsx", "src/cli/Main.ts", ...args]
    .map((a) => `'${a.replaceAll("'", "'\\''")}'`)
    .join(" ")
  return new Promise((resolve) => {
    const child = spawn("script", ["-qec", command, "/dev/null"], { env: env() })
    let stdout = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
    })
    child.once("exit", (code, signal) => resolve({ code, signal, stdout, stderr: "" }))
  })
}
