import Foundation
import Testing
import TestRigs
@testable import Touchstone
import TouchstoneFingerprint

/// The access control x situation table: every cell is asserted.
@Suite("Access control x situation (swtpm + virtual reader)", .serialized)
struct AccessTableTests {
    enum Outcome: Equatable, CustomStringConvertible {
        case opens, authFailed, cancelled, invalidated, notEnrolled, lockedOut

        var description: String {
            switch self {
            case .opens: "opens"
            case .authFailed: "authFailed"
            case .cancelled: "cancelled"
            case .invalidated: "invalidated"
            case .notEnrolled: "notEnrolled"
            case .lockedOut: "lockedOut"
            }
        }

        init(_ result: Result<String, KeychainError>, expected secret: String) {
            switch result {
            case .success(let s): self = s == secret ? .opens : .authFailed
            case .failure(.authFailed): self = .authFailed
            case .failure(.userCanceled): self = .cancelled
            case .failure(.itemInvalidated): self = .invalidated
            case .failure(.authentication(.biometryNotEnrolled)): self = .notEnrolled
            case .failure(.authentication(.biometryLockout)): self = .lockedOut
            case .failure(let other): Issue.record("unexpected error \(other)"); self = .authFailed
            }
        }
    }

    static let accesses: [(String, AccessControl)] = [
        ("none", .none),
        ("user-presence", .userPresence),
        ("biometry-any", .biometryAny),
        ("biometry-current-set", .biometryCurrentSet),
        ("passcode", .devicePasscode),
        ("biometry-current-set|passcode", .or(.biometryCurrentSet, .devicePasscode)),
        ("biometry-any&passcode", .and(.biometryAny, .devicePasscode)),
    ]

    struct Situation: Sendable, CustomTestStringConvertible {
        let name: String
        let touch: String?
        let passcode: String?
        /// Outcomes in the order of `accesses`.
        let expected: [Outcome]
        var testDescription: String { name }
    }

    // "a" is enrolled as right-index-finger before the items are stored
    // (except in "no finger enrolled"). The virtual reader cannot identify,
    // so it verifies the first enrolled finger by name, as fprintd does:
    // added fingers sort after right-index-finger.
    static let situations: [Situation] = [
        Situation(name: "matching finger", touch: "a", passcode: nil,
                  expected: [.opens, .opens, .opens, .opens, .cancelled, .opens, .cancelled]),
        Situation(name: "non-matching finger", touch: "z", passcode: nil,
                  expected: [.opens, .authFailed, .authFailed, .authFailed, .cancelled, .authFailed, .authFailed]),
        Situation(name: "no finger enrolled", touch: "a", passcode: nil,
                  expected: [.opens, .cancelled, .notEnrolled, .notEnrolled, .cancelled, .cancelled, .notEnrolled]),
        Situation(name: "a finger added since the item was stored", touch: "a", passcode: nil,
                  expected: [.opens, .opens, .opens, .invalidated, .cancelled, .cancelled, .cancelled]),
        Situation(name: "a finger removed", touch: "a", passcode: nil,
                  expected: [.opens, .opens, .opens, .invalidated, .cancelled, .cancelled, .cancelled]),
        Situation(name: "removed and re-added", touch: "a", passcode: nil,
                  expected: [.opens, .opens, .opens, .invalidated, .cancelled, .cancelled, .cancelled]),
        Situation(name: "right passcode", touch: nil, passcode: thePasscode,
                  expected: [.opens, .opens, .cancelled, .cancelled, .opens, .opens, .cancelled]),
        Situation(name: "wrong passcode", touch: nil, passcode: "0000-wrong",
                  expected: [.opens, .authFailed, .cancelled, .cancelled, .authFailed, .authFailed, .cancelled]),
        Situation(name: "matching finger and right passcode", touch: "a", passcode: thePasscode,
                  expected: [.opens, .opens, .opens, .opens, .opens, .opens, .opens]),
        Situation(name: "biometry locked out", touch: "a", passcode: nil,
                  expected: [.opens, .cancelled, .lockedOut, .lockedOut, .cancelled, .cancelled, .lockedOut]),
        Situation(name: "passcode removed", touch: "a", passcode: thePasscode,
                  expected: [.opens, .invalidated, .invalidated, .invalidated, .invalidated, .invalidated, .invalidated]),
    ]

    @Test("outcome per access control", arguments: situations)
    func cell(_ situation: Situation) async throws {
        let rig = try await DeviceRig()
        if situation.name != "no finger enrolled" {
            try await rig.enroll(.rightIndex, as: "a")
        }
        if situation.name == "a finger removed" {
            try await rig.enroll(.rightMiddle, as: "b")
        }
        for (name, access) in Self.accesses {
            try await rig.device.keychain.add(bytes("secret for \(name)"), service: "table", account: name, access: access)
        }
        switch situation.name {
        case "a finger added since the item was stored": try await rig.enroll(.rightMiddle, as: "b")
        case "a finger removed": try await rig.unenroll(.rightMiddle)
        case "removed and re-added":
            try await rig.unenroll(.rightIndex)
            try await rig.enroll(.rightIndex, as: "a")
        case "biometry locked out":
            try await rig.failMatches(5)
            #expect(try await rig.biometricFailures() == 5)
        case "passcode removed":
            try await rig.device.removePasscode(bytes(thePasscode))
        default: break
        }
        for ((name, _), expected) in zip(Self.accesses, situation.expected) {
            // Cells are independent: failed matches of one cell must not add
            // up to a lockout in the next (that has its own situation).
            if situation.name != "biometry locked out", try await rig.device.passcodeIsSet() {
                try await rig.device.withBackend { vault, _ in try vault.resetBiometricFailures() }
            }
            let result = await rig.get(name, touch: situation.touch, passcode: situation.passcode)
            let outcome = Outcome(result, expected: "secret for \(name)")
            #expect(outcome == expected, "\(situation.name) / \(name): \(outcome), expected \(expected) (\(result))")
        }
    }
}
