import Foundation
import Touchstone

/// Where passcodes come from: the descriptor of `--passcode-fd` (one line
/// per passcode asked), else the terminal with echo off. Never argv or the
/// environment. Errors are `AuthenticationError`s, so that they keep their
/// meaning through the library: `notInteractive` without a terminal,
/// `userCancel` on Ctrl-C or Ctrl-D.
final class PasscodeSource: Sendable {
    /// The `--passcode-fd` descriptor, if given.
    let fd: Int32?

    init(fd: Int32?) { self.fd = fd }

    /// Whether a passcode can be asked at all.
    var isAvailable: Bool {
        if fd != nil { return true }
        guard let tty = Terminal.open() else { return false }
        close(tty)
        return true
    }

    /// The next passcode. `prompt` is shown on the terminal (not for a
    /// descriptor). An empty passcode is refused.
    func next(prompt: String) async throws -> SecureBytes {
        if let fd {
            switch await LineReader.readLine(from: fd, limit: 1024) {
            case .line(let passcode):
                guard passcode.count > 0 else { throw AuthenticationError.failure("--passcode-fd \(fd): the passcode line is empty") }
                return passcode
            case .endOfInput:
                throw AuthenticationError.failure("--passcode-fd \(fd): no more lines (one line is read per passcode asked)")
            case .cancelled: throw AuthenticationError.userCancel
            case .failed(let why): throw AuthenticationError.failure("--passcode-fd \(fd): \(why)")
            }
        }
        guard let tty = Terminal.open() else { throw AuthenticationError.notInteractive }
        defer { close(tty) }
        Output.write(2, Array(prompt.utf8))
        Terminal.disableEcho(tty)
        let outcome = await LineReader.readLine(from: tty, limit: 1024)
        Terminal.restoreEcho()
        switch outcome {
        case .line(let passcode):
            guard passcode.count > 0 else { throw AuthenticationError.failure("the passcode is empty") }
            return passcode
        case .endOfInput, .cancelled: throw AuthenticationError.userCancel
        case .failed(let why): throw AuthenticationError.failure("reading the passcode: \(why)")
        }
    }

    /// A new passcode: asked twice on the terminal (they must match), once
    /// from a descriptor.
    func newPasscode(what: String) async throws -> SecureBytes {
        let first = try await next(prompt: "\(what): ")
        if fd != nil { return first }
        let again = try await next(prompt: "\(what), again: ")
        guard first == again else { throw AuthenticationError.failure("the two passcodes differ; nothing was changed") }
        return first
    }
}
