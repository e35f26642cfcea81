import Foundation
import TestRigs
import Testing
import TestScopes
@testable import TouchstoneClient
import Touchstone

/// The `DaemonFrame` fuzz target's committed inputs (fuzz/seeds/DaemonFrame,
/// fuzz/crashes/DaemonFrame) replayed through the function the fuzzer
/// calls (`DaemonWire.fuzzCheck`).
@Suite("Fuzz inputs replayed: DaemonFrame", .offPool)
struct DaemonFrameFuzzReplayTests {
    @Test("every seed and every input that once crashed the fuzzer: no trap, no broken invariant")
    func replay() throws {
        let inputs = try FuzzInputs.inputs("DaemonFrame")
        #expect(inputs.contains { $0.isSeed }, "no seeds in \(FuzzInputs.folder.path)/seeds/DaemonFrame")
        for input in inputs {
            #expect(DaemonWire.fuzzCheck(input.bytes) == nil, "\(input)")
        }
    }

    @Test("the seeds get past the parser: every one parses, the requests decode as the operation they name")
    func seedsReachTheDecoders() throws {
        let seeds = try FuzzInputs.inputs("DaemonFrame").filter(\.isSeed)
        var requests = 0, decoded = 0
        var named: Set<String> = []
        for seed in seeds {
            let frame: DaemonWire.Frame
            do {
                frame = try DaemonWire.Frame.parse(SecureBytes(copying: seed.bytes))
            } catch {
                Issue.record("\(seed) does not parse: \(error)")
                continue
            }
            guard frame.kind == .request else { continue }
            requests += 1
            guard let head = try? frame.decode(RequestHeadOnly.self).head, let type = DaemonWire.fuzzRequestTypes[head.operation] else {
                continue
            }
            named.insert(head.operation)
            if Self.decodes(type, frame) { decoded += 1 }
        }
        #expect(requests > 0)
        // Most: a seed of an operation whose request changed since the seeds
        // were written still parses, but no longer decodes.
        #expect(decoded * 10 >= requests * 9, "\(decoded) of \(requests) request seeds decode")
        let missing = Set(DaemonWire.fuzzRequestTypes.keys).subtracting(named)
        #expect(missing.isEmpty, "operations without a request seed: \(missing.sorted())")
    }

    static func decodes<R: EngineRequest>(_ type: R.Type, _ frame: DaemonWire.Frame) -> Bool {
        (try? frame.decodeCarrying(RequestEnvelope<R>.self)) != nil
    }

    @Test("the fuzz body decodes every operation the daemon serves")
    func everyOperation() {
        let served = Set(EngineOperations.all.map { $0.name })
        #expect(Set(DaemonWire.fuzzRequestTypes.keys) == served)
        #expect(DaemonWire.fuzzRequestTypes.count == EngineOperations.all.count)
    }

    /// The session's frames as the code encodes them now pass the body;
    /// with TOUCHSTONE_WRITE_FUZZ_SEEDS=1 they are (re)written as the seeds.
    @Test("a session's frames, encoded now, pass the fuzz body")
    func sessionFrames() throws {
        let frames = try DaemonWire.fuzzSessionFrames()
        #expect(frames.count >= 2 * DaemonWire.fuzzRequestTypes.count)
        for (name, body) in frames {
            #expect(DaemonWire.fuzzCheck(body) == nil, "\(name)")
        }
        if ProcessInfo.processInfo.environment["TOUCHSTONE_WRITE_FUZZ_SEEDS"] == "1" {
            let folder = FuzzInputs.folder.appendingPathComponent("seeds/DaemonFrame")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for (name, body) in frames { try Data(body).write(to: folder.appendingPathComponent(name)) }
        }
    }

    @Test("the invariant checks catch what they are there for")
    func checksBite() throws {
        let secrets = (0..<13).map { SecureBytes(copying: [UInt8($0)]) }
        let tooMany = DaemonWire.Frame(kind: .request, control: Data("{}".utf8), secrets: secrets)
        #expect(DaemonWire.fuzzFrameCheck(tooMany, []) != nil)
        let frame = DaemonWire.Frame(kind: .cancel, control: Data(#"{"id":1}"#.utf8))
        let body = DaemonWire.fuzzBytes(try frame.body())
        #expect(DaemonWire.fuzzFrameCheck(frame, body) == nil)
        #expect(DaemonWire.fuzzFrameCheck(frame, body + [0, 0, 0, 0]) != nil)
        let a = SecureBytes(copying: [1]), b = SecureBytes(copying: [2])
        #expect(DaemonWire.fuzzSameSecrets([a, b], [b, a]))
        #expect(!DaemonWire.fuzzSameSecrets([a, b], [a, a]))
        #expect(!DaemonWire.fuzzSameSecrets([a], [a, b]))
    }
}
