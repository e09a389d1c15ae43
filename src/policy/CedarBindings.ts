/**
 * The one place `@cedar-policy/cedar-wasm` is loaded at run time: the engine
 * (`layers/PolicyEngineCedar`), the roles a bundle names (`Roles`) and through them `policy
 * check`, `serve`'s routes and the runs all reach Cedar through `bindings()`. Other modules may
 * import the package's types only (`test/policy/CedarLoad.test.ts` holds src/ to that).
 *
 * Loaded on first use, not on import: the module instantiates 4 MB of WebAssembly (~17 MB
 * resident, ~25 ms), which every importer of the package, every CLI verb and every engine without
 * a bundle (allowAll, denyAll) would otherwise pay for nothing.
 *
 * Memoised: one instance per process. Each load that goes around Node's module cache
 * instantiates a fresh WebAssembly module with its own memory and its own store of preparsed
 * policy sets (`preparsePolicySet` keeps them under the bundle digest inside the instance, and
 * `statefulIsAuthorized` finds them only there). Called without this memo, cedar-wasm once
 * crashed V8: the process, not a JavaScript error a caller could catch.
 * On 4.13.0, the version installed, that no longer reproduces: fresh instances loaded side by
 * side and called in turn in a loop complete in a child process (`CedarUnmemoised.test.ts`,
 * which fails on another version until it is checked again). The memo stays: the preparsed sets
 * the decisions read live in one instance, the load is paid once, and a crash in the engine
 * takes the control plane down with every run it holds, so no path is to be the one that finds
 * out whether a later version crashes again.
 */
import { createRequire } from "node:module"
import type * as Cedar from "@cedar-policy/cedar-wasm/nodejs"

/** The process's one instance of the bindings, loaded on the first call. */
export const bindings = (): typeof Cedar => {
  loaded ??= createRequire(import.meta.url)("@cedar-policy/cedar-wasm/nodejs") as typeof Cedar
  return loaded
}
let loaded: typeof Cedar | undefined
