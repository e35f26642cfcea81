import FoundationEssentials
import Glibc
import TouchstonePOSIX

/// The terminal's side of an authentication, as the `touchstone` command
/// has it: prompts on stderr, Enter on the terminal to use the passcode
/// instead of a touch, passcodes typed with echo off, or read one line each
/// from a descriptor. Never from arguments or the environment.
///
/// Nonisolated on purpose: nothing here may run on the MainActor.
public final class TerminalInteraction: AuthenticationInteraction {
    /// The descriptor passcodes are read from, one line per passcode asked,
    /// instead of the terminal (`touchstone --passcode-fd N`). With one, an
    /// operation that accepts the passcode uses it without waiting for a
    /// touch.
    public let passcodeDescriptor: Int32?

    public init(passcodeDescriptor: Int32? = nil) { self.passcodeDescriptor = passcodeDescriptor }

    /// Whether a passcode can be asked at all (a descriptor, or a
    /// controlling terminal).
    public var canAskPasscode: Bool {
        if passcodeDescriptor != nil { return true }
        return Terminal.open() != nil
    }

    public func waitForPasscodeRequest(reason: String, passcodeAllowed: Bool) async {
        if passcodeAllowed && passcodeDescriptor != nil { return }
        let tty = passcodeAllowed ? Terminal.open() : nil
        Self.announceTouch(reason: reason, enterForPasscode: tty != nil)
        if let tty {
            switch await LineReader.readLine(from: tty.fd) {
            case .line: return  // Enter: the person asks for the passcode
            case .failed(let why):
                // Say so: Enter can no longer be read, only a touch ends this.
                if !Task.isCancelled { Self.say("the terminal cannot be read (\(why)): touch the reader") }
            case .endOfInput, .cancelled: break
            }
        }
        // Wait for the touch (or a cancel).
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    public func scanEvent(_ event: ScanEvent) async {
        Self.say(Self.line(for: event))
    }

    public func passcode(reason: String) async throws(AuthenticationError) -> SecureBytes {
        try await readPasscode(prompt: "Passcode: ")
    }

    /// The next passcode: from the descriptor, or typed on the terminal
    /// after `prompt` with echo off. An empty one is refused; Ctrl-C or
    /// Ctrl-D cancels (`userCancel`); no terminal and no descriptor is
    /// `notInteractive`.
    public func readPasscode(prompt: String) async throws(AuthenticationError) -> SecureBytes {
        if let fd = passcodeDescriptor {
            return try Self.passcode(await LineReader.readLine(from: fd, limit: Self.passcodeLimit), descriptor: fd)
        }
        guard let tty = Terminal.open() else { throw .notInteractive }
        // Echo off (flushing what was typed before), then the prompt, as
        // getpass(3) does: what is typed once the prompt shows is kept.
        Terminal.disableEcho(tty.fd)
        Self.write(prompt)
        let outcome = await LineReader.readLine(from: tty.fd, limit: Self.passcodeLimit)
        Terminal.restoreEcho()
        withExtendedLifetime(tty) {}
        return try Self.passcode(outcome, descriptor: nil)
    }

    /// The longest passcode line read.
    static let passcodeLimit = 1024

    /// A passcode line's read as the passcode, or the error it is: from
    /// `descriptor` (`--passcode-fd`), or from the terminal (nil).
    static func passcode(_ outcome: LineReader.Outcome, descriptor: Int32?) throws(AuthenticationError) -> SecureBytes {
        if let fd = descriptor {
            switch outcome {
            case .line(let passcode):
                guard passcode.count > 0 else { throw .interactionFailed("--passcode-fd \(fd): the passcode line is empty") }
                return passcode
            case .endOfInput:
                throw .interactionFailed("--passcode-fd \(fd): no more lines (one line is read per passcode asked)")
            case .cancelled: throw .userCancel
            case .failed(let why): throw .interactionFailed("--passcode-fd \(fd): \(why)")
            }
        }
        switch outcome {
        case .line(let passcode):
            guard passcode.count > 0 else { throw .interactionFailed("the passcode is empty") }
            return passcode
        case .endOfInput, .cancelled: throw .userCancel
        case .failed(let why): throw .interactionFailed("reading the passcode: \(why)")
        }
    }

    /// A new passcode: asked twice on the terminal (they must match), once
    /// from a descriptor. `what` names it in the prompts ("New passcode").
    public func readNewPasscode(what: String) async throws(AuthenticationError) -> SecureBytes {
        let first = try await readPasscode(prompt: "\(what): ")
        if passcodeDescriptor != nil { return first }
        let again = try await readPasscode(prompt: "\(what), again: ")
        guard first == again else { throw .interactionFailed("the two passcodes differ; nothing was changed") }
        return first
    }

    /// Restores the terminal's echo if a passcode prompt turned it off (for
    /// a process that exits in the middle of one).
    public static func restoreTerminal() { Terminal.restoreEcho() }

    /// How a scan event reads on the terminal.
    public static func line(for event: ScanEvent) -> String {
        switch event {
        case .retry(let hint): "  \(hint.message)"
        case .stage(let completed, let total): "Touch \(completed) of \(total)"
        case .touchAgain(let matched, let total): "Touch \(matched) of \(total) matched"
        }
    }

    /// What the terminal shows while a touch is awaited.
    static func announceTouch(reason: String, enterForPasscode: Bool) {
        // Whoever asked wrote the reason: one line, no terminal escapes.
        say(SafeText.escaped(reason))
        say(enterForPasscode ? "touch the reader (Enter: use passcode, Ctrl-C: cancel)"
                             : "touch the reader (Ctrl-C: cancel)")
    }

    static func say(_ line: String) { write(line + "\n") }

    /// Writes every byte to stderr, unbuffered, retrying short writes.
    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { chunk in
                try? valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true) { Glibc.write(2, chunk.baseAddress, chunk.count) }
            }
            guard let written, written > 0 else { return }
            offset += written
        }
    }
}
