"""What the hooks note besides lookup counts: optimizer hyperparameters and dense use (_facts),
each step's loss (_loss), LM heads and activation bytes (_family), TorchRec modules (_torchrec)
and weight snapshots (_weights). Imports only edo.runtime."""
