"""One AIPerfJob as Kueue sees it: the JobSet the operator builds, its pods' sizes and requests, where they may
run, Kueue's flavor assigner, and whether and why it can (never) be admitted."""
