import Foundation
import Glibc
import TestRigs
import Testing
@testable import TouchstoneClient
import Touchstone
import TouchstoneServer

/// The daemon's frames (`DaemonWire`), without a socket: what the codec
/// takes and what it refuses.
@Suite("The daemon's wire format")
struct DaemonWireTests {
    /// A frame's body as sent, less its length prefix.
    private func body(_ frame: DaemonWire.Frame) throws -> SecureBytes { try frame.body() }

    @Test("a request survives the round trip: its fields in the control part, its secrets in the secrets part in slot order (an empty one too); the largest secret fits")
    func roundTrip() throws {
        let prints = [SecureBytes(copying: [UInt8]()), SecureBytes.random(count: DaemonWire.maximumSecret)]
        let request = Calls.ImportFingers(driver: "virtual_device", deviceID: "0", fingers: [.leftThumb, .rightIndex],
                                          prints: prints, passcode: SecureBytes(copying: Array("hunter2-code".utf8)))
        let frame = try DaemonWire.Frame(request: request, program: "test", interactive: false)
        #expect(frame.secrets == [SecureBytes(copying: Array("hunter2-code".utf8))] + prints)
        let control = String(decoding: frame.control, as: UTF8.self)
        #expect(!control.contains("hunter2"), "a secret in the control part: \(control)")
        let parsed = try DaemonWire.Frame.parse(try body(frame))
        #expect(parsed.kind == .request)
        let decoded = try parsed.decodeCarrying(RequestEnvelope<Calls.ImportFingers>.self)
        #expect(decoded.head.operation == "import-fingers" && decoded.head.program == "test" && !decoded.head.interactive)
        #expect(decoded.request.fingers == [.leftThumb, .rightIndex] && decoded.request.driver == "virtual_device")
        #expect(decoded.request.passcode.bytes == SecureBytes(copying: Array("hunter2-code".utf8)))
        #expect(decoded.request.prints.map(\.bytes) == prints)
        #expect(DaemonWire.maximumSecret == Keychain.maximumSecretSize)
    }

    @Test("a response's secret travels as a secret; a typed failure and a refusal come back as themselves")
    func outcomes() throws {
        let opened = Outcome<Calls.ItemSecret>.success(.init(secret: SecureBytes(copying: Array("s3cret".utf8)),
                                                             attributes: ItemAttributes(service: "s", account: "a", access: .none)))
        let frame = try DaemonWire.Frame.parse(try body(try DaemonWire.Frame(response: opened)))
        #expect(frame.secrets == [SecureBytes(copying: Array("s3cret".utf8))])
        #expect(!String(decoding: frame.control, as: UTF8.self).contains("s3cret"))
        guard case .success(let back) = try frame.decodeCarrying(Outcome<Calls.ItemSecret>.self) else {
            Issue.record("not a success")
            return
        }
        #expect(back.secret.bytes == SecureBytes(copying: Array("s3cret".utf8)) && back.attributes.service == "s")

        let failed = try DaemonWire.Frame(response: Outcome<Calls.Secret>.failure(.itemInvalidated))
        guard case .failure(.itemInvalidated) = try failed.decodeCarrying(Outcome<Calls.Secret>.self) else {
            Issue.record("the typed failure did not come back")
            return
        }
        // A refusal reads as any operation's.
        let refusal = try DaemonWire.Frame(.response, Refusal("too many connections"))
        guard case .refused("too many connections") = try refusal.decodeCarrying(Outcome<Calls.Status>.self) else {
            Issue.record("a refusal did not decode as the operation's")
            return
        }
    }

    @Test("secrets are refused when the control part names one twice, names one the frame lacks, or leaves one unnamed; a request whose secret fields the type does not declare is a bug")
    func secretSlots() throws {
        let request = try DaemonWire.Frame(request: Calls.ChangePasscode(from: SecureBytes(copying: [1]), to: SecureBytes(copying: [2])),
                                           program: nil, interactive: false)
        #expect(try request.decodeCarrying(RequestEnvelope<Calls.ChangePasscode>.self).request.new.bytes == SecureBytes(copying: [2]))
        let control = String(decoding: request.control, as: UTF8.self)
        func frame(_ text: String, secrets: Int) -> DaemonWire.Frame {
            DaemonWire.Frame(kind: .request, control: Data(text.utf8), secrets: (0..<secrets).map { SecureBytes(copying: [UInt8($0)]) })
        }
        let twice = control.replacingOccurrences(of: "\"new\":1", with: "\"new\":0")
        #expect(twice != control)
        #expect(throws: DaemonWireError.self) { try frame(twice, secrets: 2).decodeCarrying(RequestEnvelope<Calls.ChangePasscode>.self) }
        let missing = control.replacingOccurrences(of: "\"new\":1", with: "\"new\":7")
        #expect(throws: DaemonWireError.self) { try frame(missing, secrets: 2).decodeCarrying(RequestEnvelope<Calls.ChangePasscode>.self) }
        #expect(throws: DaemonWireError.self) { try frame(control, secrets: 3).decodeCarrying(RequestEnvelope<Calls.ChangePasscode>.self) }
        #expect(Calls.ChangePasscode.secretSlots == ["old", "new"])
    }

    @Test("an import of more than ten fingers, a finger twice or a finger without its print is refused as it arrives, saying why")
    func malformedImport() throws {
        let good = try DaemonWire.Frame(request: Calls.ImportFingers(driver: "d", deviceID: "0", fingers: [.leftThumb],
                                                                     prints: [SecureBytes(copying: [1])], passcode: SecureBytes(copying: [2])),
                                        program: nil, interactive: false)
        #expect(try good.decodeCarrying(RequestEnvelope<Calls.ImportFingers>.self).request.fingers == [.leftThumb])
        let control = String(decoding: good.control, as: UTF8.self)
        for (fingers, prints) in [(Array(repeating: "\"left-thumb\"", count: 11), 11), (["\"left-thumb\"", "\"left-thumb\""], 2),
                                  (["\"left-thumb\"", "\"right-thumb\""], 1)] {
            let hostile = control.replacingOccurrences(of: "[\"left-thumb\"]", with: "[" + fingers.joined(separator: ",") + "]")
                .replacingOccurrences(of: "\"prints\":[1]", with: "\"prints\":[" + (1...prints).map(String.init).joined(separator: ",") + "]")
            let frame = DaemonWire.Frame(kind: .request, control: Data(hostile.utf8),
                                         secrets: (0...prints).map { SecureBytes(copying: [UInt8($0)]) })
            #expect {
                try frame.decodeCarrying(RequestEnvelope<Calls.ImportFingers>.self)
            } throws: { error in
                "\(error)".contains("at most ten fingers, each once, each with its print")
            }
        }
    }

    @Test("a client of protocol version 1 is refused in its own framing, with a refusal it decodes, that says to install both from one release")
    func olderClient() throws {
        let answer = try DaemonSession.refusal(of: .version(1))
        #expect(answer.version == 1 && answer.kind == .response)
        let raw = try body(answer).withUnsafeBytes { Array($0) }
        #expect(raw[0] == 1)
        // Version 1's refusal: {"refused":{"_0":"why"}}.
        let json = try JSONSerialization.jsonObject(with: answer.control) as? [String: [String: String]]
        let why = json?["refused"]?["_0"] ?? ""
        #expect(why.contains("version 1") && why.contains("touchstoned 2") && why.contains("same release"), "\(why)")
        // A client of this version told of another one's frame says what to do.
        #expect(DaemonWireError.version(3).description.contains("same release"))
        // A client that gets an older daemon's frame says which side is older.
        let told = DaemonFailure(.version(1), socket: "/run/touchstone/socket").description
        #expect(told.contains("touchstoned speaks protocol version 1 and this client 2") && told.contains("same release"), "\(told)")
    }

    @Test("refused: another version, an unknown kind, a control part or secret longer than the body, too many secrets, a control part that is not the message, a frame too large to send")
    func refused() throws {
        let good = try body(try DaemonWire.Frame(response: Outcome<Calls.Delete>.success(Done())))
        let bytes = good.withUnsafeBytes { Array($0) }
        func parse(_ raw: [UInt8]) -> DaemonWireError? {
            var copy = raw
            do { _ = try DaemonWire.Frame.parse(SecureBytes(consuming: &copy)); return nil } catch { return error }
        }
        #expect(parse(bytes) == nil, "the unaltered frame parses")
        var version = bytes; version[0] = 1
        #expect(parse(version) == .version(1))
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
        #expect(throws: DaemonWireError.self) { try wrongType.decode(RequestEnvelope<Calls.Delete>.self) }
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
