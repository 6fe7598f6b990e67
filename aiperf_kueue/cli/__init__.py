"""``aiperf-kueue``: the command line, the offline plan it runs (the real program under Pulumi's mock engine), what
it prints and writes, and the GitOps export."""
