import Foundation
import Glibc
import TestRigs
import Testing
@testable import TouchstoneClient
import Touchstone

/// The daemon's frames (`DaemonWire`), without a socket: what the codec
/// takes and what it refuses.
@Suite("The daemon's wire format")
struct DaemonWireTests {
    /// A frame's body as sent, less its length prefix.
    private func body(_ frame: DaemonWire.Frame) throws -> SecureBytes { try frame.body() }

    @Test("a frame survives the round trip: kind, control part, secrets in order (an empty one too); the largest secret fits")
    func roundTrip() throws {
        let secrets = [SecureBytes(copying: Array("pass".utf8)), SecureBytes(copying: [UInt8]()),
                       SecureBytes.random(count: DaemonWire.maximumSecret)]
        let request = DaemonRequest(call: .add(attributes: ItemAttributes(service: "s", account: "a", access: .devicePasscode)),
                                    program: "test")
        let frame = try DaemonWire.Frame(.request, request, secrets: secrets)
        let parsed = try DaemonWire.Frame.parse(try body(frame))
        #expect(parsed.kind == .request)
        #expect(parsed.secrets == secrets)
        let decoded = try parsed.decode(DaemonRequest.self)
        #expect(decoded.call == request.call)
        #expect(DaemonWire.maximumSecret == Keychain.maximumSecretSize)
    }

    @Test("refused: another version, an unknown kind, a control part or secret longer than the body, too many secrets, a control part that is not the message, a frame too large to send")
    func refused() throws {
        let good = try body(try DaemonWire.Frame(.response, DaemonOutcome.success(.none)))
        let bytes = good.withUnsafeBytes { Array($0) }
        func parse(_ raw: [UInt8]) -> DaemonWireError? {
            var copy = raw
            do { _ = try DaemonWire.Frame.parse(SecureBytes(consuming: &copy)); return nil } catch { return error }
        }
        #expect(parse(bytes) == nil, "the unaltered frame parses")
        var version = bytes; version[0] = 2
        #expect(parse(version) == .version(2))
        var kind = bytes; kind[1] = 99
        #expect(parse(kind) == .malformed("unknown frame kind 99"))
        var long = bytes; long[5] = 0xff
        #expect(parse(long) != nil, "a control length past the body")
        #expect(parse(bytes + [0, 0, 0, 9, 1]) != nil, "a secret shorter than it says")
        #expect(parse(Array(bytes.prefix(3))) != nil, "truncated")
        var many = bytes
        for _ in 0...DaemonWire.maximumSecrets { many += [0, 0, 0, 0] }
        #expect(parse(many) == .malformed("too many secrets"))
        let wrongType = try DaemonWire.Frame.parse(good)
        #expect(throws: DaemonWireError.self) { try wrongType.decode(DaemonRequest.self) }
        let huge = DaemonWire.Frame(kind: .request, control: Data(count: 8), secrets: [SecureBytes(count: DaemonWire.maximumBody)])
        #expect(throws: DaemonWireError.self) { try huge.body() }
    }

    @Test("the automatic engine's socket rule is the simulator's and the system's daemon socket, and finds nothing where no socket is")
    func socketRule() throws {
        let home = try makeTemporaryDirectory("tsw")
        defer { try? FileManager.default.removeItem(atPath: home) }
        #expect(DaemonSocket.simulator(home: home) == Simulator(home: URL(fileURLWithPath: home)).daemonSocket)
        #expect(DaemonSocket.system == Configuration.systemDaemonSocket)
        #expect(DaemonSocket.automatic(home: home, simulated: true) == nil)
        try FileManager.default.createDirectory(atPath: home + "/sim", withIntermediateDirectories: false)
        #expect(FileManager.default.createFile(atPath: DaemonSocket.simulator(home: home), contents: Data()))
        #expect(DaemonSocket.automatic(home: home, simulated: true) == nil, "a file that is not a socket")
        unlink(DaemonSocket.simulator(home: home))
        let listening = try Self.bind(DaemonSocket.simulator(home: home))
        defer { close(listening) }
        #expect(DaemonSocket.automatic(home: home, simulated: true) == DaemonSocket.simulator(home: home))
        #expect(Configuration.simulator(home: URL(fileURLWithPath: home)).resolvedEngine == .daemon(socket: DaemonSocket.simulator(home: home)))
        var embedded = Configuration.simulator(home: URL(fileURLWithPath: home))
        embedded.engine = .embedded
        #expect(embedded.resolvedEngine == .embedded)
    }

    /// A Unix socket bound at `path` (so that a socket file is there).
    static func bind(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard withUnixSocketAddress(path, { Glibc.bind(fd, $0, $1) }) == 0 else { throw CocoaError(.fileWriteUnknown) }
        return fd
    }

    @Test("random bytes never crash the parser: each is refused, or parses into a frame within the limits")
    func randomBytes() {
        for size in [0, 1, 2, 5, 6, 7, 10, 64, 300] {
            for _ in 0..<200 {
                var raw = SecureBytes.random(count: size).withUnsafeBytes { Array($0) }
                if size > 0, Bool.random() { raw[0] = DaemonWire.version }
                if let frame = try? DaemonWire.Frame.parse(SecureBytes(consuming: &raw)) {
                    #expect(frame.secrets.count <= DaemonWire.maximumSecrets)
                }
            }
        }
    }
}
