"""The quota planner: GPU inventory and shares in, per-flavor quotas out; Kueue's cross-checks of the queue config
and of the priority classes."""
