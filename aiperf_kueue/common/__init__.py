"""What every layer shares: config problems and their one-line messages, values shown in YAML terms, input limits,
nearest-word suggestions, exact Kubernetes quantities, and the layout of what is printed and written (text
columns, Markdown tables, JSON and YAML: :mod:`aiperf_kueue.common.render`)."""
