"""aiperf-kueue: the pure, Pulumi-free core: config model, quota planner, manifest builders."""
