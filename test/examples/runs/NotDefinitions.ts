/** A `--runs` module whose list holds something that is not a run definition. */
export default { definitions: [{ capability: "refund" }] }
