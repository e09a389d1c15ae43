/**
 * TaskStore's `claim`: a reviewer taking an open task. The raw mirror is `TaskStoreSql`'s
 * success path: one guarded update with the eligibility checks in SQL, no transaction (a refusal
 * would go on to the store's read-and-name transaction, which this operation never takes).
 */
import { Effect } from "effect"
import { TaskId } from "../../src/domain/TaskId.js"
import { TaskStore } from "../../src/services/TaskStore.js"
import { expect, hex64, NOW, type Op, runId } from "../Op.js"
import { insertRows, names, pick } from "../Raw.js"

const COLUMNS =
  "task_id, run_id, case_id, kind, justification, candidate_roles, escalate_to, excluded_actors, assignee, priority, state, on_expiry, created_at, due_at"
const CLAIM_GUARD =
  "UPDATE tasks SET assignee = $3 , state = 'claimed' WHERE tenant = $1 AND task_id = $2 AND ((state IN ('open', 'escalated') AND (assignee IS NULL OR assignee = $3)) OR (state = 'claimed' AND assignee = $3)) AND "
const CLAIM_PG = `${CLAIM_GUARD}NOT ($3::text = ANY (excluded_actors)) AND (cardinality(candidate_roles) = 0 OR candidate_roles && $4::text[]) RETURNING ${COLUMNS}`
const CLAIM_SQLITE = `${CLAIM_GUARD}NOT EXISTS (SELECT 1 FROM json_each(excluded_actors) WHERE value = $3) AND (candidate_roles = '[]' OR EXISTS (SELECT 1 FROM json_each(candidate_roles) WHERE value IN (SELECT value FROM json_each($4)))) RETURNING ${COLUMNS}`

/**
 * Prototype: claim's read, eligibility checks and guarded update in one statement. The row as
 * read comes back beside the outcome, so a refusal is still named in the contract's order.
 */
const CLAIM_CTE = `WITH found AS (SELECT ${COLUMNS} FROM tasks WHERE tenant = $1 AND task_id = $2), claimed AS (UPDATE tasks SET assignee = $3, state = 'claimed' WHERE tenant = $1 AND task_id = $2 AND NOT ($3::text = ANY (excluded_actors)) AND (cardinality(candidate_roles) = 0 OR candidate_roles && $4::text[]) AND ((state IN ('open', 'escalated') AND (assignee IS NULL OR assignee = $3)) OR (state = 'claimed' AND assignee = $3)) RETURNING ${COLUMNS}) SELECT 'claimed' AS outcome, * FROM claimed UNION ALL SELECT 'refused', * FROM found WHERE NOT EXISTS (SELECT 1 FROM claimed)`

export const JUSTIFICATION = JSON.stringify({
  summary: "refund above the automatic limit",
  proposedAction: { refund: 250 },
  confidence: 0.8,
  cost: null,
  evidence: ["ticket-1"],
})

export const taskClaim: Op = {
  name: "task claim",
  ops: 3000,
  make: (cell) => {
    const ids = Array.from({ length: cell.count }, (_, i) => TaskId.make(hex64(`task-${i}`)))
    const id = (i: number) => ids[i] ?? TaskId.make(hex64(`task-${i}`))
    return {
      seed: (raw) =>
        insertRows(
          raw,
          "tasks",
          [
            "tenant",
            "task_id",
            "run_id",
            "case_id",
            "kind",
            "justification",
            "candidate_roles",
            "escalate_to",
            "excluded_actors",
            "assignee",
            "priority",
            "state",
            "on_expiry",
            "created_at",
            "due_at",
          ],
          ids.map((task, i) => [
            cell.tenant,
            task,
            runId(i),
            null,
            "approve-refund",
            JUSTIFICATION,
            names(raw, ["reviewer"]),
            names(raw, []),
            names(raw, ["agent"]),
            null,
            "normal",
            "open",
            "deny",
            NOW,
            NOW + 3600,
          ]),
        ),
      store: (i) => Effect.flatMap(TaskStore, (s) => s.claim(id(i), "alice", ["reviewer"])).pipe(Effect.asVoid),
      raw: async (raw, i) => {
        // sqlite binds `?` in order of appearance: tenant, id, then the actor three times, actor, roles.
        const params =
          raw.dialect === "pg"
            ? [cell.tenant, id(i), "alice", ["reviewer"]]
            : ["alice", cell.tenant, id(i), "alice", "alice", "alice", JSON.stringify(["reviewer"])]
        const claimed = await raw.query(pick(raw, CLAIM_PG, CLAIM_SQLITE), params, true)
        expect(claimed.length === 1, "raw claim took nothing")
      },
      prototypes: [
        {
          name: "one CTE",
          run: async (raw, i) => {
            const [row] = await raw.query(CLAIM_CTE, [cell.tenant, id(i), "alice", ["reviewer"]])
            expect(row?.outcome === "claimed", "CTE claim took nothing")
          },
        },
      ],
    }
  },
}
