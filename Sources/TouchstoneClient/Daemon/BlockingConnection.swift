import Glibc
import TouchstonePOSIX
import TouchstoneSecure

/// `DaemonConnection`'s calls for a process that runs on one thread with
/// blocking calls (touchstone-get): the request, then the daemon's frames
/// until its response, the prompts answered by `terminal` on the way. A
/// signal (`terminal.interrupt`) ends the call with `CancellationError`;
/// the caller closes the connection, and the daemon cancels what it was
/// doing.
package struct BlockingConnection {
    package let socket: FrameSocket
    package let terminal: BlockingTerminal
    package let socketPath: String
    package let program: String

    package init(socket: FrameSocket, terminal: BlockingTerminal, socketPath: String, program: String) {
        self.socket = socket
        self.terminal = terminal
        self.socketPath = socketPath
        self.program = program
    }

    /// One call. Any failure of the connection is a `DaemonFailure` naming
    /// `socketPath` (lost when it closed); a signal, `CancellationError`.
    package func call<R: EngineRequest>(_ request: R) throws -> Outcome<R> {
        do {
            try socket.send(try DaemonWire.Frame(request: request, program: program, interactive: true))
            return try exchange().decodeCarrying(Outcome<R>.self)
        } catch let error as DaemonWireError {
            throw DaemonFailure(error, socket: socketPath)
        }
    }

    /// A touch prompt being shown: its id, and the terminal whose Enter
    /// asks for the passcode instead.
    private struct Touch {
        let id: UInt32
        var enter: Terminal.Handle?
    }

    private func exchange() throws -> DaemonWire.Frame {
        var touch: Touch?
        while true {
            var fds = [pollfd(fd: socket.fd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: terminal.interrupt.readEnd, events: Int16(POLLIN), revents: 0),
                       pollfd(fd: touch?.enter?.fd ?? -1, events: Int16(POLLIN), revents: 0)]
            do {
                _ = try valueOrErrno(retryOnInterrupt: true) { poll(&fds, 3, -1) }
            } catch {
                throw DaemonWireError.call("poll", error)
            }
            if fds[1].revents != 0 { throw CancellationError() }
            if fds[2].revents != 0, let shown = touch, let tty = shown.enter {
                let asked = terminal.readEnter(tty)
                touch?.enter = nil
                if terminal.interrupt.fired { throw CancellationError() }
                // Enter: the person asks for the passcode. At the
                // terminal's end, the touch alone remains.
                if asked { try reply(DaemonReply(id: shown.id, answer: .fallback)) }
                continue
            }
            guard fds[0].revents != 0 else { continue }
            let frame = try socket.receive(idle: nil, stall: .seconds(30))
            switch frame.kind {
            case .response:
                return frame
            case .event:
                BlockingTerminal.say(try frame.decode(ScanEvent.self))
            case .prompt:
                let prompt = try frame.decode(DaemonPrompt.self)
                switch prompt.need {
                case .passcode:
                    try answerPasscode(prompt.id)
                case .touch(let reason, let passcodeAllowed):
                    switch terminal.touchPrompt(reason: reason, passcodeAllowed: passcodeAllowed) {
                    case .useThePasscode: try reply(DaemonReply(id: prompt.id, answer: .fallback))
                    case .waiting(let enter):
                        touch = Touch(id: prompt.id, enter: enter)
                    }
                }
            case .cancel:
                let id = try frame.decode(DaemonCancel.self).id
                if let shown = touch, shown.id == id {
                    touch = nil
                }
            case .request, .reply:
                throw DaemonWireError.malformed("a \(frame.kind) frame from the daemon")
            }
        }
    }

    /// Reads the passcode and sends it; a failure to read is the answer.
    /// When the daemon speaks first (it cancelled the prompt), nothing is
    /// sent: the next frame says what came instead.
    private func answerPasscode(_ id: UInt32) throws {
        let typed: SecureBytes?
        do {
            typed = try terminal.passcode(unlessReadable: socket.fd)
        } catch {
            if terminal.interrupt.fired { throw CancellationError() }
            try reply(DaemonReply(id: id, answer: .failed(error)))
            return
        }
        if terminal.interrupt.fired { throw CancellationError() }
        guard let typed else { return }
        try reply(DaemonReply(id: id, answer: .passcode), secrets: [typed])
    }

    private func reply(_ reply: DaemonReply, secrets: [SecureBytes] = []) throws(DaemonWireError) {
        try socket.send(try DaemonWire.Frame(.reply, reply, secrets: secrets))
    }
}
