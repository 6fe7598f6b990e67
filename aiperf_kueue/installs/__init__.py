"""What the program installs around the queues, as plain data: the Helm releases of Kueue, JobSet and the AIPerf
operator, the operator's env and RBAC, what keeps them from working, and the cluster they go to."""
