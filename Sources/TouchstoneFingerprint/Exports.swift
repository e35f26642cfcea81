// The domain types (Finger, ScanEvent, RetryHint, ...) are the model's.
@_exported import TouchstoneModel
