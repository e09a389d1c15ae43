/** A `--runs` module with no definitions, which `serve` refuses. */
export default { definitions: [] }
