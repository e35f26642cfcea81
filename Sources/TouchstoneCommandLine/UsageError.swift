/// A command line the parser refuses: the message that follows
/// `touchstone: error:` on stderr before the usage line and exit 64.
struct UsageError: Error, Sendable, Hashable {
    /// One line saying what is wrong.
    let message: String

    init(_ message: String) { self.message = message }
}
