import Synchronization
import Testing
@testable import TouchstoneFIDO

/// CTAPHID's framing and channel rules (CTAP 2.1, 11.2), without a
/// transport: reports in, actions out.
@Suite("CTAPHID: framing, channels, one transaction at a time")
struct CTAPHIDTests {
    static let identity = CTAPHIDChannels.Identity(deviceVersion: (1, 2, 3), capabilities: 0x01 | 0x04 | 0x08)

    /// A device whose channels are 0x11111111, 0x22222222, ... in order.
    static func device() -> CTAPHIDChannels {
        let next = Mutex<UInt32>(0)
        return CTAPHIDChannels(identity: identity, random: { next.withLock { $0 &+= 0x1111_1111; return $0 } })
    }

    static func send(_ device: inout CTAPHIDChannels, _ message: CTAPHID.Message, at now: Double = 0) -> [CTAPHIDChannels.Action] {
        CTAPHID.reports(for: message).flatMap { device.receive($0, at: now) }
    }

    /// A channel allocated with INIT: its id, and the answer's bytes checked.
    static func allocate(_ device: inout CTAPHIDChannels) throws -> UInt32 {
        let nonce: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8]
        let actions = send(&device, CTAPHID.Message(channel: CTAPHID.broadcastChannel, .initialize, nonce))
        guard case .send(let answer)? = actions.first, actions.count == 1 else { throw Failure("INIT gave \(actions)") }
        #expect(answer.channel == CTAPHID.broadcastChannel && answer.command == CTAPHID.Command.initialize.rawValue)
        #expect(answer.payload.count == 17 && Array(answer.payload.prefix(8)) == nonce)
        #expect(Array(answer.payload[12...]) == [2, 1, 2, 3, 0x0D], "protocol 2, version 1.2.3, capabilities")
        return answer.payload[8..<12].reduce(0) { $0 << 8 | UInt32($1) }
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test("a message of any size up to 7609 bytes goes out as reports of 64 bytes and comes back whole; 7610 bytes is refused as too long")
    func framingRoundTrip() throws {
        for size in [0, 1, 57, 58, 116, 117, 1000, CTAPHID.maximumPayload] {
            let payload = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let reports = CTAPHID.reports(for: CTAPHID.Message(channel: 0x0102_0304, .cbor, payload))
            #expect(reports.allSatisfy { $0.count == 64 })
            #expect(reports.count == 1 + max(0, (size - 57 + 58) / 59), "\(size)")
            var assembler = CTAPHIDAssembler()
            var outcomes = reports.map { assembler.receive($0, at: 0) }
            #expect(outcomes.removeLast() == .message(CTAPHID.Message(channel: 0x0102_0304, .cbor, payload)), "\(size)")
            #expect(outcomes.allSatisfy { $0 == .nothing })
        }
        var assembler = CTAPHIDAssembler()
        let tooLong = CTAPHID.bigEndian(7) + [0x90, UInt8((CTAPHID.maximumPayload + 1) >> 8), UInt8((CTAPHID.maximumPayload + 1) & 0xFF)]
        #expect(assembler.receive(tooLong + [UInt8](repeating: 0, count: 57), at: 0) == .error(channel: 7, .invalidLength))
    }

    @Test("bad reports are errors and leave nothing behind: a wrong length, channel 0, a continuation without its start or out of sequence, another channel's packet mid-message (busy), a silence past the timeout")
    func badReports() {
        var assembler = CTAPHIDAssembler(packetTimeout: 0.5)
        #expect(assembler.receive([1, 2, 3], at: 0) == .nothing, "too short to name a channel")
        #expect(assembler.receive(CTAPHID.bigEndian(9) + [0x81, 0, 0], at: 0) == .error(channel: 9, .invalidLength))
        #expect(assembler.receive([0, 0, 0, 0, 0x81] + [UInt8](repeating: 0, count: 59), at: 0) == .error(channel: 0, .invalidChannel))
        #expect(assembler.receive(CTAPHID.bigEndian(9) + [0] + [UInt8](repeating: 0, count: 59), at: 0) == .error(channel: 9, .invalidSequence))

        let long = CTAPHID.reports(for: CTAPHID.Message(channel: 9, .cbor, [UInt8](repeating: 0xAB, count: 200)))
        #expect(assembler.receive(long[0], at: 0) == .nothing)
        #expect(assembler.receive(CTAPHID.reports(for: CTAPHID.Message(channel: 10, .ping, [1]))[0], at: 0.1) == .error(channel: 10, .channelBusy))
        #expect(assembler.receive(long[2], at: 0.1) == .error(channel: 9, .invalidSequence), "sequence 1 before 0")
        #expect(assembler.assembling == nil, "dropped")

        #expect(assembler.receive(long[0], at: 1) == .nothing)
        #expect(assembler.receive(long[1], at: 1.4) == .nothing)
        #expect(assembler.expire(at: 1.8) == .nothing, "0.4 s since the last packet")
        #expect(assembler.expire(at: 2.0) == .error(channel: 9, .messageTimeout))
        #expect(assembler.receive(long[2], at: 2.0) == .error(channel: 9, .invalidSequence), "the rest of an expired message")
        // The next client is served.
        let ping = CTAPHID.Message(channel: 11, .ping, [7, 7])
        #expect(assembler.receive(CTAPHID.reports(for: ping)[0], at: 3) == .message(ping))
    }

    @Test("INIT on the broadcast channel allocates a new channel with the nonce echoed; INIT on it again keeps it; commands on channels never allocated, or on the broadcast channel, are invalid-channel errors")
    func channels() throws {
        var device = Self.device()
        let first = try Self.allocate(&device)
        let second = try Self.allocate(&device)
        #expect(first != second && device.isAllocated(first) && device.isAllocated(second))
        let again = Self.send(&device, CTAPHID.Message(channel: first, .initialize, [9, 9, 9, 9, 9, 9, 9, 9]))
        guard case .send(let answer)? = again.first else { Issue.record("\(again)"); return }
        #expect(answer.channel == first && answer.payload[8..<12].reduce(0) { $0 << 8 | UInt32($1) } == first)
        #expect(Self.send(&device, CTAPHID.Message(channel: 0x5555_5555, .ping, [1])) == [.send(.error(0x5555_5555, .invalidChannel))])
        #expect(Self.send(&device, CTAPHID.Message(channel: CTAPHID.broadcastChannel, .ping, [1])) == [.send(.error(CTAPHID.broadcastChannel, .invalidChannel))])
        #expect(Self.send(&device, CTAPHID.Message(channel: CTAPHID.broadcastChannel, .initialize, [1, 2])) == [.send(.error(CTAPHID.broadcastChannel, .invalidLength))])
        #expect(Self.send(&device, CTAPHID.Message(channel: first, command: 0x2A, payload: [])) == [.send(.error(first, .invalidCommand))])
        #expect(Self.send(&device, CTAPHID.Message(channel: first, .lock, [1])) == [.send(.error(first, .invalidCommand))])
    }

    @Test("one transaction at a time: a CBOR request is dispatched; meanwhile another channel's request, or a second on its own, is busy; CANCEL on it cancels, on another channel does nothing; once finished the next is served; PING echoes")
    func oneTransaction() throws {
        var device = Self.device()
        let first = try Self.allocate(&device)
        let second = try Self.allocate(&device)
        let ping = CTAPHID.Message(channel: second, .ping, Array(0..<100))
        #expect(Self.send(&device, ping) == [.send(ping)])

        let request = CTAPHID.Message(channel: first, .cbor, [0x04])
        #expect(Self.send(&device, request) == [.dispatch(request)])
        #expect(device.busy == first)
        #expect(Self.send(&device, CTAPHID.Message(channel: second, .cbor, [0x04])) == [.send(.error(second, .channelBusy))])
        #expect(Self.send(&device, CTAPHID.Message(channel: second, .ping, [1])) == [.send(.error(second, .channelBusy))])
        #expect(Self.send(&device, CTAPHID.Message(channel: first, .cbor, [0x04])) == [.send(.error(first, .channelBusy))])
        #expect(Self.send(&device, CTAPHID.Message(channel: second, .cancel)) == [], "another channel's cancel")
        #expect(Self.send(&device, CTAPHID.Message(channel: first, .cancel)) == [.cancel(channel: first)])
        device.finished(first)
        #expect(device.busy == nil)
        let next = CTAPHID.Message(channel: second, .cbor, [0x04])
        #expect(Self.send(&device, next) == [.dispatch(next)])
        // INIT on the busy channel resynchronises it: its request is cancelled.
        let resync = Self.send(&device, CTAPHID.Message(channel: second, .initialize, [1, 1, 1, 1, 1, 1, 1, 1]))
        #expect(resync.first == .cancel(channel: second) && resync.count == 2)
    }

    @Test("at most 256 channels are kept: the 257th allocation drops the oldest, whose requests are then invalid-channel")
    func channelBound() throws {
        var device = Self.device()
        let oldest = try Self.allocate(&device)
        for _ in 0..<CTAPHIDChannels.maximumChannels { _ = try Self.allocate(&device) }
        #expect(!device.isAllocated(oldest))
        #expect(Self.send(&device, CTAPHID.Message(channel: oldest, .ping, [1])) == [.send(.error(oldest, .invalidChannel))])
    }
}
