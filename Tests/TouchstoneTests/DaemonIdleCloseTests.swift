import Foundation
import Glibc
import TestRigs
import Testing
@testable import Touchstone
import TouchstoneClient
import TouchstonePOSIX

/// A request that crosses touchstoned's close of an idle connection: the
/// daemon says it closed the connection unread (DaemonWire.idleClosing),
/// and the daemon engine sends the request again on a new connection.
/// Played by a stand-in daemon on a socket of the test's, so that the
/// crossing happens every time, not when the timing allows.
@Suite("The daemon engine across an idle close")
struct DaemonIdleCloseTests {
    @Test("the daemon reads a request's first bytes, answers idle-closing and closes: the engine connects again, sends it once more, and returns the answer to it")
    func requestCrossingTheClose() async throws {
        let folder = try makeTemporaryDirectory("tsi")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/d.sock"
        let listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        #expect(withUnixSocketAddress(path, { bind(listener, $0, $1) }) == 0 && listen(listener, 4) == 0)
        defer { close(listener) }

        // The stand-in: connection 1 is closed as idle under the first request; connection 2 answers.
        async let served = offPool { () -> [String] in
            var seen: [String] = []
            let accepted = accept(listener, nil, nil)
            var byte: UInt8 = 0
            _ = recv(accepted, &byte, 1, Int32(MSG_PEEK))  // the request has begun to arrive
            let first = FrameSocket(owning: OwnedDescriptor(adopting: accepted))
            try? first.send(try! DaemonWire.Frame(.response, Refusal(DaemonWire.idleClosing)))
            first.shut()
            seen.append("closed one unread")
            // A minute for the engine to connect again; without it, the test fails here.
            var waiting = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&waiting, 1, 60_000) == 1 else { return seen }
            let second = FrameSocket(owning: OwnedDescriptor(adopting: accept(listener, nil, nil)))
            if let frame = try? second.receive(idle: nil, stall: .seconds(30)), frame.kind == .request {
                seen.append("request on two")
                try? second.send(try! DaemonWire.Frame(response: Outcome<Calls.PasscodeIsSet>.success(true)))
            }
            _ = try? second.receive(idle: .seconds(5), stall: .seconds(5))  // until the engine goes
            return seen
        }
        let engine = try DaemonEngine.open(Configuration(home: URL(fileURLWithPath: folder), engine: .daemon(socket: path)), socket: path)
        let answer = try? await engine.call(Calls.PasscodeIsSet(), interaction: nil)
        #expect(answer == true)
        await engine.close()
        _ = consume engine
        #expect(try await served == ["closed one unread", "request on two"])
    }
}
