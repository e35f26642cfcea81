import Foundation
import TouchstoneClient

/// How long a grant the daemon holds opens anything, and how many a
/// connection holds: enforced here, whatever the client asks (the honest
/// client library's own caps only mirror these).
enum GrantPolicy {
    /// The longest reuse window, after the touch or passcode that made the
    /// grant (LocalAuthentication's maximum allowable reuse duration).
    static let longest: Double = 300
    /// The most live grants one connection holds; beyond, the oldest goes.
    static let perConnection = 16
    /// The longest wait for one touch a request may ask of the daemon's
    /// reader (an enrolment waits this long for each of its touches).
    static let longestTouchMilliseconds = 60_000
    /// The longest a whole enrolment may hold the reader (three minutes:
    /// a reader that wants fifteen touches has twelve seconds for each).
    /// Debug builds read a shorter one from
    /// TOUCHSTONE_TEST_LONGEST_ENROLMENT_SECONDS, so a test need not wait
    /// three minutes to see it end an enrolment.
    static let longestEnrolment: Duration = {
        #if DEBUG
        if let text = ProcessInfo.processInfo.environment["TOUCHSTONE_TEST_LONGEST_ENROLMENT_SECONDS"],
           let seconds = Int(text), seconds > 0 {
            return .seconds(seconds)
        }
        #endif
        return .seconds(180)
    }()
}

/// A grant the daemon keeps for one connection.
struct HeldGrant: Sendable {
    let reference: GrantReference
    /// When it was made, on the daemon's clock (seconds).
    let issued: Double
    /// Its place among the connection's grants, oldest first: the one that
    /// goes beyond `perConnection` (two made within one tick of the clock
    /// have the same `issued`).
    let order: UInt64
    /// After this it opens nothing (a one-use grant, once used: at once).
    var expires: Double
    /// Made with no reuse window: it opens one operation, then is gone.
    let singleUse: Bool
}
