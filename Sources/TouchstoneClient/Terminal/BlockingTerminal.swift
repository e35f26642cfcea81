import Glibc
import TouchstoneSecure

/// `TerminalInteraction`'s prompts and texts for a process that does
/// everything on one thread with blocking calls (touchstone-get: no Swift
/// concurrency, no threads, so that it starts and ends fast). Every wait
/// also watches `interrupt`, which a signal makes readable.
package struct BlockingTerminal: Sendable {
    /// `--passcode-fd`: passcodes are read from it, one line each.
    package let passcodeDescriptor: Int32?
    package let interrupt: Interrupt

    package init(passcodeDescriptor: Int32?, interrupt: Interrupt) {
        self.passcodeDescriptor = passcodeDescriptor
        self.interrupt = interrupt
    }

    /// The passcode, as `TerminalInteraction.passcode(reason:)` reads it;
    /// nil when `peer` (the daemon's socket) became readable first (the
    /// daemon no longer needs it: a cancel or the call's end is coming).
    package func passcode(unlessReadable peer: Int32) throws(AuthenticationError) -> SecureBytes? {
        let outcome: LineReader.Outcome
        if let fd = passcodeDescriptor {
            outcome = LineReader.blockingRead(fd, cancel: interrupt.readEnd, alsoCancel: peer, limit: TerminalInteraction.passcodeLimit)
        } else {
            guard let tty = Terminal.open() else { throw .notInteractive }
            // Echo off first, then the prompt (TerminalInteraction.readPasscode).
            Terminal.disableEcho(tty.fd)
            TerminalInteraction.write("Passcode: ")
            outcome = LineReader.blockingRead(tty.fd, cancel: interrupt.readEnd, alsoCancel: peer, limit: TerminalInteraction.passcodeLimit)
            Terminal.restoreEcho()
            withExtendedLifetime(tty) {}
        }
        if case .cancelled = outcome, !interrupt.fired { return nil }
        return try TerminalInteraction.passcode(outcome, descriptor: passcodeDescriptor)
    }

    /// What a touch prompt does, as `TerminalInteraction.waitForPasscodeRequest`:
    /// `.useThePasscode` at once when that is allowed and a descriptor gives
    /// it; otherwise the prompt's lines are shown and the wait goes on, with
    /// the terminal whose Enter asks for the passcode (when allowed and
    /// there is one; it closes when the last reference goes).
    package func touchPrompt(reason: String, passcodeAllowed: Bool) -> TouchWait {
        if passcodeAllowed && passcodeDescriptor != nil { return .useThePasscode }
        let tty = passcodeAllowed ? Terminal.open() : nil
        TerminalInteraction.announceTouch(reason: reason, enterForPasscode: tty != nil)
        return .waiting(enter: tty)
    }

    package enum TouchWait: Sendable {
        case useThePasscode
        case waiting(enter: Terminal.Handle?)
    }

    /// Whether a line (Enter) was read from `tty` (readable: the terminal
    /// hands over whole lines); false at its end or on a signal.
    package func readEnter(_ tty: Terminal.Handle) -> Bool {
        if case .line = LineReader.blockingRead(tty.fd, cancel: interrupt.readEnd, limit: 4096) { return true }
        return false
    }

    package static func say(_ event: ScanEvent) { TerminalInteraction.say(TerminalInteraction.line(for: event)) }

    package static func restoreTerminal() { Terminal.restoreEcho() }
}

/// SIGINT and SIGTERM, for a process without Dispatch: the handler writes
/// a byte to a pipe whose read end every blocking wait watches.
package final class Interrupt: Sendable {
    package let readEnd: Int32

    /// Installs the handlers (once per process).
    package init() {
        var fds: [Int32] = [-1, -1]
        precondition(pipe(&fds) == 0, "pipe failed")
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(fds[1], F_SETFL, fcntl(fds[1], F_GETFL) | O_NONBLOCK)
        readEnd = fds[0]
        interruptWriteEnd = fds[1]
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in
            var byte: UInt8 = 1
            _ = write(interruptWriteEnd, &byte, 1)
        }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0  // no SA_RESTART: a blocking call returns EINTR
        for number in [SIGINT, SIGTERM] { sigaction(number, &action, nil) }
    }

    /// Whether a signal came.
    package var fired: Bool {
        var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
        return poll(&poller, 1, 0) > 0
    }
}

/// The write end of `Interrupt`'s pipe, for its signal handler (which can
/// capture nothing). Written once, before the handler is installed.
nonisolated(unsafe) private var interruptWriteEnd: Int32 = -1
