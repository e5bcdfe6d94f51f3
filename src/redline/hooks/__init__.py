"""The guard: protected-path policy, the commit/push gate, approvals, hook installation."""
