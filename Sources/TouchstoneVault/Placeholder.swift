// The TouchstoneVault module: filled in by its issue.
