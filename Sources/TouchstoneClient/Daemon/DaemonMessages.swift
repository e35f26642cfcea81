import FoundationEssentials
import Glibc

/// The head of a request frame's control part: which operation, and what
/// the daemon needs to know about the caller besides.
package struct RequestHead: Codable, Sendable {
    /// The operation's `EngineRequest.name`.
    package var operation: String
    /// What the client says it is (logged as the client's word; the daemon
    /// logs the kernel's pid and uid beside it).
    package var program: String?
    /// Whether the client has an interaction to answer prompts.
    package var interactive: Bool

    package init(operation: String, program: String?, interactive: Bool) {
        self.operation = operation
        self.program = program
        self.interactive = interactive
    }
}

/// A request frame's control part: the head, and the request.
package struct RequestEnvelope<R: EngineRequest>: Codable, Sendable {
    package var head: RequestHead
    package var request: R

    package init(_ request: R, program: String?, interactive: Bool) {
        head = RequestHead(operation: R.name, program: program, interactive: interactive)
        self.request = request
    }
}

/// Only the head of a request frame's control part (the daemon reads it
/// first, to know which operation's request follows).
package struct RequestHeadOnly: Codable, Sendable {
    package var head: RequestHead
}

/// A response frame's control part: the operation's response, its typed
/// failure, or the daemon's refusal of the request (malformed, not
/// allowed; the connection closes after it).
package enum Outcome<R: EngineRequest>: Codable, Sendable {
    case success(R.Response)
    case failure(R.Failure)
    case refused(String)
}

/// The control part of a response that refuses whatever was asked (a
/// frame that does not parse, too many connections): it decodes as any
/// operation's `Outcome` refusal.
package struct Refusal: Codable, Sendable {
    package var refused: Why
    package struct Why: Codable, Sendable { var _0: String }
    package init(_ why: String) { refused = Why(_0: why) }
    package var reason: String { refused._0 }
}

/// A prompt frame's control part: the call needs the person.
package struct DaemonPrompt: Codable, Sendable {
    package enum Need: Codable, Sendable {
        /// Show that a touch is awaited; answer `.fallback` when the person
        /// asks for the passcode instead (allowed when `passcodeAllowed`).
        case touch(reason: String, passcodeAllowed: Bool)
        /// Answer with the passcode (`.passcode`, the secret attached).
        case passcode(reason: String)
    }
    package var id: UInt32
    package var need: Need

    package init(id: UInt32, need: Need) {
        self.id = id
        self.need = need
    }
}

/// A reply frame's control part.
package struct DaemonReply: Codable, Sendable {
    package enum Answer: Codable, Sendable {
        case fallback
        /// The reply's first secret is the passcode.
        case passcode
        case failed(AuthenticationError)
    }
    package var id: UInt32
    package var answer: Answer

    package init(id: UInt32, answer: Answer) {
        self.id = id
        self.answer = answer
    }
}

/// A cancel frame's control part: the prompt `id` is no longer needed.
package struct DaemonCancel: Codable, Sendable {
    package var id: UInt32
    package init(id: UInt32) { self.id = id }
}

/// `Status` as it crosses the socket (its own `Encodable` is the CLI's
/// `--json` form, which leaves out the problems' details).
package struct DaemonStatus: Codable, Sendable {
    var home: String
    var reader: Status.Reader
    var tpm: Status.TPM
    var vault: Status.Vault
    var passcodeSet: Bool?
    var fingers: [Finger]
    var fingersProblem: DeviceError?
    var biometryLockout: Bool?
    var failedAttempts: Int?
    var items: Int?
    var matchingTouches: MatchingTouches?
    var problem: DeviceError?

    package init(_ status: Status) {
        home = status.home
        reader = status.reader
        tpm = status.tpm
        vault = status.vault
        passcodeSet = status.passcodeSet
        fingers = status.fingers
        fingersProblem = status.fingersProblem
        biometryLockout = status.biometryLockout
        failedAttempts = status.failedAttempts
        items = status.items
        matchingTouches = status.matchingTouches
        problem = status.problem
    }

    package var status: Status {
        var status = Status(home: home, reader: reader, tpm: tpm, vault: vault, passcodeSet: passcodeSet, fingers: fingers,
                            biometryLockout: biometryLockout, failedAttempts: failedAttempts, items: items, problem: problem)
        status.fingersProblem = fingersProblem
        status.matchingTouches = matchingTouches
        return status
    }
}
