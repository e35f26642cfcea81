/// CTAPHID's channels and commands above the framing (CTAP 2.1, 11.2.9):
/// what a report asks of the device, as actions for the transport to carry
/// out. It allocates channels (CTAPHID_INIT), answers PING and WINK, and
/// keeps one transaction at a time: a CBOR (or MSG) request is handed out
/// to be dispatched, and until `finished`, another channel's request is
/// answered "channel busy". No clock of its own and no thread: the
/// transport gives each report its time, and calls `expire` on a timer.
package struct CTAPHIDChannels: Sendable {
    /// What to do for a report.
    package enum Action: Equatable, Sendable {
        /// Send this message.
        case send(CTAPHID.Message)
        /// Carry out this CBOR or MSG request, then `finished(channel)`.
        case dispatch(CTAPHID.Message)
        /// Cancel the request in progress on this channel (CTAPHID_CANCEL):
        /// it answers CTAP2_ERR_KEEPALIVE_CANCEL.
        case cancel(channel: UInt32)
    }

    /// What INIT tells about the device.
    package struct Identity: Sendable {
        package var deviceVersion: (major: UInt8, minor: UInt8, build: UInt8)
        /// CAPABILITY_WINK 0x01, CAPABILITY_CBOR 0x04, CAPABILITY_NMSG 0x08.
        package var capabilities: UInt8

        package init(deviceVersion: (major: UInt8, minor: UInt8, build: UInt8), capabilities: UInt8) {
            self.deviceVersion = deviceVersion
            self.capabilities = capabilities
        }
    }

    /// The most channels kept; past it, the least recently allocated goes.
    package static let maximumChannels = 256

    package let identity: Identity
    private var assembler: CTAPHIDAssembler
    private var channels: [UInt32] = []
    private var random: @Sendable () -> UInt32
    /// The channel whose request is being carried out.
    package private(set) var busy: UInt32?

    package init(identity: Identity, packetTimeout: Double = 0.5, random: @escaping @Sendable () -> UInt32 = { UInt32.random(in: 1..<UInt32.max) }) {
        self.identity = identity
        assembler = CTAPHIDAssembler(packetTimeout: packetTimeout)
        self.random = random
    }

    /// Whether `channel` was allocated (and not dropped since).
    package func isAllocated(_ channel: UInt32) -> Bool { channels.contains(channel) }

    /// A message that stopped arriving: its error.
    package mutating func expire(at now: Double) -> [Action] {
        if case .error(let channel, let code) = assembler.expire(at: now) { return [.send(.error(channel, code))] }
        return []
    }

    /// The transaction on `channel` is answered: the next may begin.
    package mutating func finished(_ channel: UInt32) {
        if busy == channel { busy = nil }
    }

    package mutating func receive(_ report: [UInt8], at now: Double) -> [Action] {
        var actions = expire(at: now)
        switch assembler.receive(report, at: now) {
        case .nothing: break
        case .error(let channel, let code): actions.append(.send(.error(channel, code)))
        case .message(let message): actions += handle(message)
        }
        return actions
    }

    private mutating func handle(_ message: CTAPHID.Message) -> [Action] {
        let channel = message.channel
        guard let command = CTAPHID.Command(rawValue: message.command) else {
            return [.send(.error(channel, .invalidCommand))]
        }
        if command == .initialize { return initialize(message) }
        guard channel != CTAPHID.broadcastChannel, isAllocated(channel) else { return [.send(.error(channel, .invalidChannel))] }
        if command == .cancel {
            // No answer of its own; the request in progress answers.
            return busy == channel ? [.cancel(channel: channel)] : []
        }
        if busy != nil { return [.send(.error(channel, .channelBusy))] }
        switch command {
        case .ping:
            return [.send(CTAPHID.Message(channel: channel, .ping, message.payload))]
        case .wink where identity.capabilities & 0x01 != 0:
            return [.send(CTAPHID.Message(channel: channel, .wink))]
        case .cbor where identity.capabilities & 0x04 != 0, .msg where identity.capabilities & 0x08 == 0:
            busy = channel
            return [.dispatch(message)]
        default:
            return [.send(.error(channel, .invalidCommand))]
        }
    }

    /// INIT: on the broadcast channel, a new channel; on an allocated one,
    /// the same channel again, its transaction abandoned (resynchronised).
    private mutating func initialize(_ message: CTAPHID.Message) -> [Action] {
        let channel = message.channel
        guard message.payload.count == 8 else { return [.send(.error(channel, .invalidLength))] }
        var actions: [Action] = []
        let answered: UInt32
        if channel == CTAPHID.broadcastChannel {
            var fresh = random()
            while fresh == 0 || fresh == CTAPHID.broadcastChannel || isAllocated(fresh) { fresh = random() }
            channels.append(fresh)
            if channels.count > Self.maximumChannels { channels.removeFirst() }
            answered = fresh
        } else {
            guard isAllocated(channel) else { return [.send(.error(channel, .invalidChannel))] }
            if busy == channel { actions.append(.cancel(channel: channel)) }
            answered = channel
        }
        let version = identity.deviceVersion
        let payload = message.payload + CTAPHID.bigEndian(answered) + [2, version.major, version.minor, version.build, identity.capabilities]
        actions.append(.send(CTAPHID.Message(channel: channel, .initialize, payload)))
        return actions
    }
}
