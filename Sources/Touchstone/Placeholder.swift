// The Touchstone module: filled in by its issue.
