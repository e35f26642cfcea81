import Foundation
import Testing
import TestScopes
@testable import Touchstone
import TouchstoneServer
import TouchstoneSecure

/// The daemon's warm passcode (`WarmPasscode`), on its own: what it keeps,
/// for which passcode, and for how long. Its use through the daemon, with
/// the TPM stopped, is `DaemonTests.warmPasscode`.
@Suite("The daemon's warm passcode", .offPool)
struct WarmPasscodeTests {
    private func bytes(_ text: String) -> SecureBytes { SecureBytes(copying: Array(text.utf8)) }

    @Test("the remembered passcode gives back the key and record it was kept with; another passcode, one byte longer or shorter, gets nothing")
    func onlyThatPasscode() throws {
        let warm = WarmPasscode()
        #expect(warm.opened(for: bytes("1234")) == nil, "nothing is warm before a passcode was remembered")
        let key = SecureBytes.random(count: 32)
        warm.remember(bytes("1234"), secret: key, record: [1, 2, 3])
        let kept = try #require(warm.opened(for: bytes("1234")))
        #expect(kept.secret == key)
        #expect(kept.record == [1, 2, 3])
        for other in ["1235", "123", "12345", ""] {
            #expect(warm.opened(for: bytes(other)) == nil, "\(other) opened the warm key")
            #expect(!warm.matches(bytes(other)))
        }
        #expect(warm.matches(bytes("1234")))
    }

    @Test("forgotten (a passcode change), the passcode is cold: it gets nothing")
    func forget() {
        let warm = WarmPasscode()
        warm.remember(bytes("1234"), secret: .random(count: 32), record: [9])
        #expect(warm.isWarm)
        warm.forget()
        #expect(!warm.isWarm)
        #expect(warm.opened(for: bytes("1234")) == nil)
    }

    /// A clock that moves only when told.
    private final class ManualClock: Sendable {
        private let now = Locked(ContinuousClock.now)
        func read() -> ContinuousClock.Instant { now.withLock { $0 } }
        func advance(_ by: Duration) { now.withLock { $0 += by } }
    }

    @Test("a passcode unused for its lifetime is cold; each use renews it")
    func lifetime() {
        let clock = ManualClock()
        let warm = WarmPasscode(lifetime: .seconds(300), clock: { clock.read() })
        warm.remember(bytes("1234"), secret: .random(count: 32), record: [9])
        clock.advance(.seconds(200))
        #expect(warm.matches(bytes("1234")), "used within its lifetime")
        clock.advance(.seconds(200))
        #expect(warm.matches(bytes("1234")), "renewed by the use 200 s before")
        clock.advance(.seconds(300))
        #expect(!warm.isWarm)
        #expect(warm.opened(for: bytes("1234")) == nil, "300 s without a use")
    }

    @Test("left alone, a warm passcode is wiped by its own timer once its lifetime passed")
    func wipedByItsTimer() async throws {
        let warm = WarmPasscode(lifetime: .milliseconds(100))
        warm.remember(bytes("1234"), secret: .random(count: 32), record: [9])
        #expect(warm.holdsKey)
        // Nothing reads it; the timer wipes the entry. Waits as long as the
        // machine needs (at most a minute).
        var waited = 0
        while warm.holdsKey && waited < 600 {
            try await Task.sleep(for: .milliseconds(100))
            waited += 1
        }
        #expect(!warm.holdsKey)
        #expect(warm.opened(for: bytes("1234")) == nil)
    }

    @Test("each uid has its own warm passcode")
    func perUser() {
        let users = WarmPasscodes()
        users.of(1000).remember(bytes("alice"), secret: .random(count: 32), record: [1])
        #expect(users.of(1000).matches(bytes("alice")))
        #expect(!users.of(1001).matches(bytes("alice")))
        #expect(users.of(1000) === users.of(1000))
    }
}
