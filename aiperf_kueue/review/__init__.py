"""Two plans compared for a pull request: what ``pulumi up`` would create, update, replace and delete, what is
destructive, the quota rows, the queue tree, rendered as Markdown; the stacks a pull request affects."""
