/**
 * What a deployment signs its tenants' checkpoints with (§6.5): its name and an Ed25519 signer.
 * Each tenant's log has its own origin, `<deployment>/log/<tenant>` (the tenant percent-encoded,
 * so the origin stays a schema-less URL with no space or `+`, as C2SP `tlog-checkpoint` asks),
 * and every checkpoint is signed by the one deployment key: an auditor trusts one verifier key
 * and tells the tenants' logs apart by origin.
 */
import { Either } from "effect"
import { CheckpointMalformed, type NoteError } from "../errors/LogError.js"
import * as Checkpoint from "./Checkpoint.js"
import type { Digest } from "./Digest.js"
import type * as SignedNote from "./SignedNote.js"
import type { TenantId } from "./Tenant.js"

export interface LogKey {
  /** The deployment's name, as it leads every origin: `agentplane.example.com`. */
  readonly deployment: string
  readonly signer: SignedNote.Signer
}

/** A deployment's name: non-empty, with no whitespace, `+` or control character (it leads an origin line). */
export const isDeployment = (name: string): boolean => name.length > 0 && !/[\s+\p{Cc}]/u.test(name)

/** The key of `deployment`, if its name can lead an origin. */
export const make = (deployment: string, signer: SignedNote.Signer): Either.Either<LogKey, CheckpointMalformed> =>
  isDeployment(deployment)
    ? Either.right({ deployment, signer })
    : Either.left(new CheckpointMalformed({ detail: `${JSON.stringify(deployment)} cannot name a deployment` }))

/** The origin line of `tenant`'s log. */
export const origin = (deployment: string, tenant: TenantId): string =>
  `${deployment}/log/${encodeURIComponent(tenant)}`

/** The signed checkpoint note of `tenant`'s log at `size` with `root`. */
export const sign = (
  key: LogKey,
  tenant: TenantId,
  size: number,
  root: Digest,
): Either.Either<string, NoteError | CheckpointMalformed> =>
  Either.flatMap(
    Either.try({
      try: () => new Checkpoint.Checkpoint({ origin: origin(key.deployment, tenant), size, root }),
      catch: (e) => new CheckpointMalformed({ detail: String(e) }),
    }),
    (checkpoint) => Checkpoint.sign(checkpoint, [key.signer]),
  )
