"""The whole plan of a stack: every Kubernetes object as a manifest, how jobs are submitted, AIPerf's preflight,
the warnings, and the one place every config problem is collected."""
