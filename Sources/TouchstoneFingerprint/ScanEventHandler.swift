/// Receives `ScanEvent`s. Called on libfprint's thread: keep it short and
/// hop elsewhere for real work.
package typealias ScanEventHandler = @Sendable (ScanEvent) -> Void
