import FoundationEssentials
import Glibc
import TouchstonePOSIX
import TouchstoneSecure

/// The protocol between a `DaemonEngine` and `touchstoned`, on a Unix
/// stream socket (docs/daemon.md, "Protocol").
///
/// Every message is one frame: a 4-byte big-endian length of the body,
/// then the body: a version byte, a kind byte, a 4-byte big-endian length
/// of the control part, the control part (JSON: what the message says),
/// then the secrets part: zero or more secrets, each a 4-byte big-endian
/// length and its bytes. Secrets (passcodes, item secrets) travel only in
/// the secrets part, which is read straight into `SecureBytes`; the control
/// part never holds one. A frame longer than `maximumBody`, a version other
/// than `version`, an unknown kind, a control part that does not decode or
/// secrets that do not add up to the body are protocol errors: the peer
/// closes the connection.
package enum DaemonWire {
    /// The protocol version both sides speak. 2: one request type per
    /// operation (`Calls`), named in the request's head. A peer of another
    /// version is refused with a clear error (`DaemonWireError.version`);
    /// the daemon answers a version 1 client in its own framing.
    package static let version: UInt8 = 2

    /// The refusal touchstoned writes before it closes a connection that
    /// was silent for its timeout: no request of it was read, so a client
    /// whose request crossed the close sends it again on a new connection.
    package static let idleClosing = "touchstoned closed this connection, silent for its timeout: no request on it was read"
    /// The largest secret (`Keychain.maximumSecretSize`, 1 MiB).
    package static let maximumSecret = 1 << 20
    /// The longest body: the largest secret plus room for its attributes.
    package static let maximumBody = maximumSecret + (256 << 10)
    /// The longest control part.
    package static let maximumControl = 256 << 10
    /// Most secrets in one frame (an import's prints: the passcode and up
    /// to ten prints).
    package static let maximumSecrets = 12

    package enum Kind: UInt8, Sendable {
        /// Client: a call (`Request`). One at a time per connection.
        case request = 1
        /// Client: the answer to a prompt (`Reply`).
        case reply = 2
        /// Daemon: the call's outcome (`Response`); the call is over.
        case response = 3
        /// Daemon: the call needs the person (`Prompt`).
        case prompt = 4
        /// Daemon: a reader event during a touch (`ScanEvent`).
        case event = 5
        /// Daemon: a prompt that is no longer needed (`Cancel`).
        case cancel = 6
    }

    /// One decoded frame.
    package struct Frame: Sendable {
        package var kind: Kind
        package var control: Data
        package var secrets: [SecureBytes]
        /// The version byte it is sent with (another only to refuse an
        /// older peer in its own framing).
        package var version = DaemonWire.version
        /// The locked memory this frame holds of its sender's budget, given
        /// back when the last copy of the frame goes (a received frame only).
        package var hold: FrameHold?

        package init(kind: Kind, control: Data, secrets: [SecureBytes] = []) {
            self.kind = kind
            self.control = control
            self.secrets = secrets
        }

        /// A frame whose control part is `value`: its `WireSecret` fields
        /// go to the secrets part, after `secrets`.
        package init<T: Encodable>(_ kind: Kind, _ value: T, secrets: [SecureBytes] = []) throws(DaemonWireError) {
            try self.init(kind, value, secrets: secrets, slots: nil)
        }

        /// A request frame for `request`: its secrets checked against the
        /// slots it declares (a secret field it does not name is a bug).
        package init<R: EngineRequest>(request: R, program: String?, interactive: Bool) throws(DaemonWireError) {
            try self.init(.request, RequestEnvelope(request, program: program, interactive: interactive), secrets: [],
                          slots: Set(R.secretSlots))
        }

        /// A response frame for an operation's outcome.
        package init<R: EngineRequest>(response: Outcome<R>) throws(DaemonWireError) {
            try self.init(.response, response, secrets: [], slots: nil)
        }

        private init<T: Encodable>(_ kind: Kind, _ value: T, secrets: [SecureBytes], slots: Set<String>?) throws(DaemonWireError) {
            let sink = WireSecrets.Sink(secrets)
            let encoder = JSONEncoder()
            encoder.userInfo[WireSecrets.key] = sink
            let control: Data
            do {
                control = try encoder.encode(value)
            } catch {
                throw .malformed("cannot encode \(T.self)")
            }
            if let slots {
                precondition(sink.paths.allSatisfy(slots.contains), "\(T.self) carries secrets \(sink.paths) beyond its slots \(slots.sorted())")
            }
            self.init(kind: kind, control: control, secrets: sink.secrets)
        }

        /// The control part as `T`, its `WireSecret` fields taken from the
        /// secrets part (each place once).
        package func decode<T: Decodable>(_ type: T.Type) throws(DaemonWireError) -> T {
            try decode(type, source: WireSecrets.Source(secrets)).0
        }

        /// Like `decode`, for a request or a response: every secret the
        /// frame carries must be one of its fields'.
        package func decodeCarrying<T: Decodable>(_ type: T.Type) throws(DaemonWireError) -> T {
            let (value, source) = try decode(type, source: WireSecrets.Source(secrets))
            guard source.allTaken else { throw .malformed("a \(kind) frame with secrets its control part does not name") }
            return value
        }

        private func decode<T: Decodable>(_ type: T.Type, source: WireSecrets.Source) throws(DaemonWireError) -> (T, WireSecrets.Source) {
            let decoder = JSONDecoder()
            decoder.userInfo[WireSecrets.key] = source
            do {
                return (try decoder.decode(type, from: control), source)
            } catch let error as DecodingError {
                throw .malformed("a \(kind) frame whose control part is not a \(T.self): \(Self.reason(error))")
            } catch {
                throw .malformed("a \(kind) frame whose control part is not a \(T.self)")
            }
        }

        /// What a decoding error says, for the log and the refusal (a
        /// field's name and the decoder's words; never a value).
        private static func reason(_ error: DecodingError) -> String {
            let context: DecodingError.Context? = switch error {
            case .dataCorrupted(let c), .keyNotFound(_, let c), .typeMismatch(_, let c), .valueNotFound(_, let c): c
            @unknown default: nil
            }
            guard let context else { return "undecodable" }
            let path = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return (path.isEmpty ? "" : path + ": ") + String(context.debugDescription.prefix(200))
        }

        /// The body, as sent after its length.
        func body() throws(DaemonWireError) -> SecureBytes {
            guard control.count <= DaemonWire.maximumControl else { throw .tooLarge(control.count) }
            guard secrets.count <= DaemonWire.maximumSecrets else { throw .malformed("too many secrets") }
            let size = 6 + control.count + secrets.reduce(0) { $0 + 4 + $1.count }
            guard size <= DaemonWire.maximumBody else { throw .tooLarge(size) }
            return SecureBytes(count: size) { out in
                var at = 0
                func put(_ bytes: UnsafeRawBufferPointer) {
                    if bytes.count > 0 { out.baseAddress!.advanced(by: at).copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
                    at += bytes.count
                }
                func putLength(_ n: Int) {
                    withUnsafeBytes(of: UInt32(n).bigEndian) { put($0) }
                }
                withUnsafeBytes(of: (version, kind.rawValue)) { put($0) }
                putLength(control.count)
                control.withUnsafeBytes { put($0) }
                for secret in secrets {
                    putLength(secret.count)
                    secret.withUnsafeBytes { put($0) }
                }
            }
        }

        /// Parses a body (without its length prefix).
        static func parse(_ body: SecureBytes) throws(DaemonWireError) -> Frame {
            try body.withUnsafeBytes { bytes in Result { () throws(DaemonWireError) in try parse(bytes) } }.get()
        }

        private static func parse(_ bytes: UnsafeRawBufferPointer) throws(DaemonWireError) -> Frame {
            do {
                var at = 0
                func take(_ n: Int) throws(DaemonWireError) -> UnsafeRawBufferPointer {
                    guard n >= 0, bytes.count - at >= n else { throw .malformed("a frame shorter than it says") }
                    defer { at += n }
                    return UnsafeRawBufferPointer(rebasing: bytes[at..<at + n])
                }
                func length() throws(DaemonWireError) -> Int {
                    let raw = try take(4)
                    return Int(UInt32(raw[0]) << 24 | UInt32(raw[1]) << 16 | UInt32(raw[2]) << 8 | UInt32(raw[3]))
                }
                let head = try take(2)
                guard head[0] == DaemonWire.version else { throw .version(head[0]) }
                guard let kind = Kind(rawValue: head[1]) else { throw .malformed("unknown frame kind \(head[1])") }
                let controlLength = try length()
                guard controlLength <= DaemonWire.maximumControl else { throw .tooLarge(controlLength) }
                let control = Data(try take(controlLength))
                var secrets: [SecureBytes] = []
                while at < bytes.count {
                    guard secrets.count < DaemonWire.maximumSecrets else { throw .malformed("too many secrets") }
                    let part = try take(try length())
                    secrets.append(SecureBytes(count: part.count) { out in
                        if part.count > 0 { out.baseAddress!.copyMemory(from: part.baseAddress!, byteCount: part.count) }
                    })
                }
                return Frame(kind: kind, control: control, secrets: secrets)
            }
        }
    }
}

/// What went wrong with the bytes on the socket.
package enum DaemonWireError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The peer closed the connection (or it broke).
    case closed
    /// Nothing (or not the rest of a frame) arrived in time.
    case timedOut
    case tooLarge(Int)
    /// A frame whose bytes would pass its sender's budget of locked memory
    /// (the frames of the same user in flight hold the rest).
    case overBudget(Int)
    case version(UInt8)
    case malformed(String)
    /// A system call failed: which, and the kernel's error.
    case call(String, Errno)
    /// The socket could not be used, and why.
    case system(String)

    package var description: String {
        switch self {
        case .closed: "the connection was closed"
        case .timedOut: "the peer sent nothing in time"
        case .tooLarge(let n): "a frame of \(n) bytes, more than \(DaemonWire.maximumBody)"
        case .overBudget(let n): "a frame of \(n) bytes while this user's other requests in flight hold the locked memory the daemon gives one user: wait for them to finish"
        case .version(let v): "the peer speaks protocol version \(v) and this side \(DaemonWire.version): touchstone and touchstoned must come from the same release"
        case .malformed(let why): "malformed message: \(why)"
        case .call(let call, let errno): "\(call): \(errno)"
        case .system(let why): why
        }
    }
}

extension DaemonFailure {
    /// What a wire error on the connection to `socket` means to a client:
    /// the daemon went away (the connection closed), or it refused the
    /// exchange.
    package init(_ error: DaemonWireError, socket: String) {
        if case .version(let theirs) = error {
            self.init(.refused, socket: socket, reason: "touchstoned speaks protocol version \(theirs) and this client \(DaemonWire.version): "
                        + "install touchstone and touchstoned from the same release")
            return
        }
        self.init(error == .closed ? .lost : .refused, socket: socket, reason: error.description)
    }
}
