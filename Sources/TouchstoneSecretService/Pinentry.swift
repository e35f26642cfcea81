import Foundation
import TouchstoneSecure
import TouchstonePOSIX

/// Asks the person for a passcode through pinentry, GnuPG's dialog program
/// (pinentry-gnome3, -qt, -curses, -tty: whichever `pinentry` is), over
/// the Assuan protocol on its stdin and stdout, as gpg-agent does. For a
/// program that has no terminal of its own to prompt on (the Secret
/// Service provider, the ssh-agent).
///
/// The conversation: the greeting, the options (the terminal to use, when
/// one is given), SETTITLE, SETDESC, SETPROMPT, SETERROR (after a wrong
/// passcode), GETPIN, BYE. Text sent is percent-escaped as Assuan asks
/// (%25, %0D, %0A), lines at most 1000 bytes; the passcode comes back in a
/// data line, unescaped straight into locked memory. `ask` runs it on a
/// thread of its own; `askPasscode` blocks its caller.
package struct Pinentry: Sendable {
    /// Assuan's longest line, the line feed included.
    static let maximumLine = 1000
    /// GPG_ERR_CANCELED in the pinentry error source: the person cancelled.
    static let cancelled = 83_886_179

    package enum Outcome: Sendable {
        case passcode(SecureBytes)
        case cancelled
    }

    package struct Failure: Error, Sendable, CustomStringConvertible {
        package let description: String
        init(_ description: String) { self.description = description }
    }

    package let program: String
    /// The terminal a text-mode pinentry draws on (`OPTION ttyname`), or
    /// nil (a graphical one, through DISPLAY or WAYLAND_DISPLAY).
    package let ttyName: String?
    package let environment: [String: String]

    package init(program: String = "/usr/bin/pinentry", ttyName: String? = nil, environment: [String: String]) {
        self.program = program
        self.ttyName = ttyName
        self.environment = environment
    }

    /// `askPasscode` on a thread of its own (it blocks until the person
    /// answers), never on a Swift concurrency thread. Cancelling the task
    /// ends the dialog (the pinentry is killed): `.cancelled`.
    package func ask(title: String, description: String, prompt: String = "Passcode:",
                     error: String? = nil) async throws(Failure) -> Outcome {
        let running = Locked<(pid: pid_t?, cancelled: Bool)>((nil, false))
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Result<Outcome, Failure>, Never>) in
                startDetachedThread(name: "touchstone-pin") {
                    continuation.resume(returning: Result { () throws(Failure) in
                        try askPasscode(title: title, description: description, prompt: prompt, error: error) { pid in
                            // Started: killed at once if the task was cancelled meanwhile.
                            let cancelled = running.withLock { state in
                                state.pid = pid
                                return state.cancelled
                            }
                            if cancelled { kill(pid, SIGTERM) }
                        }
                    })
                }
            }
        } onCancel: {
            let pid = running.withLock { state in
                state.cancelled = true
                return state.pid
            }
            if let pid { kill(pid, SIGTERM) }
        }
        if running.withLock({ $0.cancelled }) {
            if case .success(.passcode(let passcode)) = result { return .passcode(passcode) }
            return .cancelled
        }
        return try result.get()
    }

    /// One passcode, or `.cancelled` when the person cancels. Blocks.
    /// `started`: told the pinentry's pid once it runs.
    package func askPasscode(title: String, description: String, prompt: String = "Passcode:",
                             error: String? = nil, started: (pid_t) -> Void = { _ in }) throws(Failure) -> Outcome {
        let session = try Conversation(program: program, environment: environment)
        defer { session.end() }
        started(session.pid)
        try session.expectOK("the greeting")
        if let ttyName {
            try session.command("OPTION ttyname=" + ttyName)
            try session.command("OPTION ttytype=" + (environment["TERM"] ?? "dumb"))
        }
        try session.command("SETTITLE " + Self.escape(title))
        try session.command("SETDESC " + Self.escape(description))
        try session.command("SETPROMPT " + Self.escape(prompt))
        if let error { try session.command("SETERROR " + Self.escape(error)) }
        return try session.getPin()
    }

    /// Text as an Assuan command's argument: %, CR and LF escaped, cut to
    /// fit a line.
    static func escape(_ text: String) -> String {
        var out = ""
        for scalar in text.unicodeScalars {
            let piece: String
            switch scalar {
            case "%": piece = "%25"
            case "\r": piece = "%0D"
            case "\n": piece = "%0A"
            default: piece = String(scalar)
            }
            guard out.utf8.count + piece.utf8.count <= maximumLine - 32 else { break }
            out += piece
        }
        return out
    }

    /// A running pinentry and the lines it writes.
    private final class Conversation {
        let pid: pid_t
        /// The pinentry's stdin, until `end()` closes it.
        private var input: OwnedDescriptor?
        /// Its stdout, closed with the conversation.
        private let output: OwnedDescriptor
        private var buffered: [UInt8] = []

        init(program: String, environment: [String: String]) throws(Failure) {
            let child: PipedChild
            do {
                child = try ChildSpawn.startPiped(program, [], environment: environment)
            } catch {
                throw Failure(error.description)  // "cannot run PROGRAM: why"
            }
            pid = child.pid
            input = .some(child.input)
            output = child.output
        }

        /// BYE, then the process reaped (killed if it does not go).
        func end() {
            _ = try? send("BYE")
            input = nil  // closed: the pinentry reads the end of its input
            var status: Int32 = 0
            for _ in 0..<100 {
                if (try? valueOrErrno(retryOnInterrupt: true) { waitpid(pid, &status, WNOHANG) }) == pid { return }
                usleep(10_000)
            }
            kill(pid, SIGKILL)
            _ = ChildSpawn.waitForExit(pid)
        }

        func send(_ line: String) throws(Failure) {
            let bytes = Array((line + "\n").utf8)
            guard bytes.count <= Pinentry.maximumLine else { throw Failure("an Assuan line longer than \(Pinentry.maximumLine) bytes") }
            do {
                try bytes.withUnsafeBytes { raw in
                    switch input {
                    case .some(let pipe): try pipe.writeAll(raw)
                    case .none: throw Errno.brokenPipe
                    }
                }
            } catch {
                throw Failure("pinentry went away (\(error))")
            }
        }

        /// The next line, without its line feed, into locked memory (a data
        /// line may hold the passcode); the read buffer is wiped as it goes.
        func line() throws(Failure) -> SecureBytes {
            while true {
                if let end = buffered.firstIndex(of: 0x0a) {
                    let line = buffered[..<end].withUnsafeBytes { SecureBytes(copying: $0) }
                    let rest = Array(buffered[(end + 1)...])
                    secureWipe(&buffered)
                    buffered = rest
                    return line
                }
                guard buffered.count <= Pinentry.maximumLine else { throw Failure("pinentry sent a line longer than Assuan allows") }
                var chunk = [UInt8](repeating: 0, count: 1024)
                let n = (try? chunk.withUnsafeMutableBytes { bytes in try output.read(into: bytes) }) ?? -1
                guard n > 0 else { throw Failure("pinentry ended the conversation") }
                buffered += chunk[..<n]
                secureWipe(&chunk)
            }
        }

        /// Reads up to the command's OK; comments and status lines skipped.
        func expectOK(_ what: String) throws(Failure) {
            while true {
                let reply = try line()
                let text = reply.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                if text == "OK" || text.hasPrefix("OK ") { return }
                if text.hasPrefix("#") || text.hasPrefix("S ") { continue }
                throw Failure("pinentry refused \(what): \(text)")
            }
        }

        func command(_ line: String) throws(Failure) {
            try send(line)
            try expectOK(String(line.prefix { $0 != " " }))
        }

        func getPin() throws(Failure) -> Outcome {
            try send("GETPIN")
            var passcode: SecureBytes?
            while true {
                let reply = try line()
                let head = reply.withUnsafeBytes { Array($0.prefix(4)) }
                if head.starts(with: Array("D ".utf8)) {
                    passcode = Self.unescape(reply, from: 2)
                    continue
                }
                let text = reply.withUnsafeBytes { String(decoding: $0, as: UTF8.self) }
                if text == "OK" || text.hasPrefix("OK ") { return .passcode(passcode ?? SecureBytes(count: 0)) }
                if text.hasPrefix("#") || text.hasPrefix("S ") || text.hasPrefix("INQUIRE") {
                    if text.hasPrefix("INQUIRE") { try send("END") }
                    continue
                }
                if text.hasPrefix("ERR "), let code = Int(text.dropFirst(4).prefix { $0 != " " }),
                   code == Pinentry.cancelled || code & 0xffff == 99 {  // GPG_ERR_CANCELED in any source
                    return .cancelled
                }
                throw Failure("pinentry: \(text)")
            }
        }

        /// A data line's bytes from `start`, percent-escapes decoded (no
        /// String is made of them: the line may be the passcode).
        static func unescape(_ line: SecureBytes, from start: Int) -> SecureBytes {
            func hex(_ byte: UInt8) -> UInt8? {
                switch byte {
                case 0x30...0x39: byte - 0x30
                case 0x41...0x46: byte - 0x41 + 10
                case 0x61...0x66: byte - 0x61 + 10
                default: nil
                }
            }
            /// The byte an escape at `i` stands for, if there is one.
            func escaped(_ bytes: UnsafeRawBufferPointer, _ i: Int) -> UInt8? {
                guard bytes[i] == 0x25, i + 2 < bytes.count, let high = hex(bytes[i + 1]), let low = hex(bytes[i + 2]) else { return nil }
                return high << 4 | low
            }
            return line.withUnsafeBytes { bytes -> SecureBytes in
                var count = 0, i = start
                while i < bytes.count {
                    i += escaped(bytes, i) == nil ? 1 : 3
                    count += 1
                }
                return SecureBytes(count: count) { out in
                    var i = start, o = 0
                    while i < bytes.count {
                        if let value = escaped(bytes, i) {
                            out[o] = value
                            i += 3
                        } else {
                            out[o] = bytes[i]
                            i += 1
                        }
                        o += 1
                    }
                }
            }
        }
    }
}
