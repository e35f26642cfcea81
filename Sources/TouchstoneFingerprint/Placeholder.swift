// The TouchstoneFingerprint module: filled in by its issue.
