/// CTAPHID (FIDO CTAP 2.1, section 11.2): the HID transport's framing, the
/// same for every carrier of 64-byte reports (uhid, UDP datagrams).
///
/// A message is sent as an initialization packet, CID (4, big-endian)
/// CMD (1, high bit set) BCNT (2, big-endian) DATA (57), then continuation
/// packets, CID SEQ (1, 0...127) DATA (59), each report zero-padded to 64
/// bytes: at most 57 + 128 × 59 = 7609 bytes of payload.
package enum CTAPHID {
    package static let reportSize = 64
    package static let initialData = reportSize - 7
    package static let continuationData = reportSize - 5
    package static let maximumPayload = initialData + 128 * continuationData
    /// The channel a client allocates its own channel on.
    package static let broadcastChannel: UInt32 = 0xFFFF_FFFF

    package enum Command: UInt8, Sendable {
        case ping = 0x01
        case msg = 0x03
        case lock = 0x04
        case initialize = 0x06
        case wink = 0x08
        case cbor = 0x10
        case cancel = 0x11
        case keepalive = 0x3B
        case error = 0x3F
    }

    /// CTAPHID_ERROR's codes.
    package enum ErrorCode: UInt8, Sendable {
        case invalidCommand = 0x01
        case invalidParameter = 0x02
        case invalidLength = 0x03
        case invalidSequence = 0x04
        case messageTimeout = 0x05
        case channelBusy = 0x06
        case lockRequired = 0x0A
        case invalidChannel = 0x0B
        case other = 0x7F
    }

    /// CTAPHID_KEEPALIVE's status byte.
    package enum KeepaliveStatus: UInt8, Sendable {
        case processing = 0x01
        case userPresenceNeeded = 0x02
    }

    /// One message: a command and its payload on a channel.
    package struct Message: Equatable, Sendable {
        package let channel: UInt32
        package let command: UInt8
        package let payload: [UInt8]

        package init(channel: UInt32, command: UInt8, payload: [UInt8]) {
            self.channel = channel
            self.command = command
            self.payload = payload
        }

        package init(channel: UInt32, _ command: Command, _ payload: [UInt8] = []) {
            self.init(channel: channel, command: command.rawValue, payload: payload)
        }

        /// An error message for `channel`.
        package static func error(_ channel: UInt32, _ code: ErrorCode) -> Message {
            Message(channel: channel, .error, [code.rawValue])
        }
    }

    /// The reports that carry `message` (its payload cut to the maximum).
    package static func reports(for message: Message) -> [[UInt8]] {
        let payload = message.payload.prefix(maximumPayload)
        var reports: [[UInt8]] = []
        var first = bigEndian(message.channel) + [message.command | 0x80] + [UInt8(payload.count >> 8), UInt8(payload.count & 0xFF)]
        first += payload.prefix(initialData)
        reports.append(padded(first))
        var rest = payload.dropFirst(initialData)
        var sequence: UInt8 = 0
        while !rest.isEmpty {
            reports.append(padded(bigEndian(message.channel) + [sequence] + rest.prefix(continuationData)))
            rest = rest.dropFirst(continuationData)
            sequence += 1
        }
        return reports
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    package static func channel(of report: [UInt8]) -> UInt32 {
        report.prefix(4).reduce(0) { $0 << 8 | UInt32($1) }
    }

    private static func padded(_ bytes: [UInt8]) -> [UInt8] {
        bytes + [UInt8](repeating: 0, count: max(0, reportSize - bytes.count))
    }
}

/// Reassembles messages from reports, one message at a time (CTAPHID
/// serves one transaction at a time): what a report completes, or the
/// error to answer on its channel. A report that is not 64 bytes, a
/// channel of 0, a continuation out of sequence or without its
/// initialization packet, a length over the maximum, another channel's
/// packet while a message is assembled (channel busy), and a message whose
/// next packet is later than `packetTimeout` are errors; nothing of a bad
/// report is kept.
package struct CTAPHIDAssembler: Sendable {
    package enum Outcome: Equatable, Sendable {
        /// A whole message.
        case message(CTAPHID.Message)
        /// Answer CTAPHID_ERROR with this code on this channel.
        case error(channel: UInt32, CTAPHID.ErrorCode)
        /// Nothing to do yet (a packet of a message still arriving), or a
        /// report that names no channel to answer (too short to).
        case nothing
    }

    /// The longest wait between two packets of one message (seconds).
    package let packetTimeout: Double

    private var pending: (channel: UInt32, command: UInt8, length: Int, payload: [UInt8], sequence: UInt8, last: Double)?

    package init(packetTimeout: Double = 0.5) { self.packetTimeout = packetTimeout }

    /// The channel of the message being assembled, if any.
    package var assembling: UInt32? { pending?.channel }

    /// A message being assembled and silent for longer than the timeout:
    /// dropped, with the error to answer (call it on a timer, and before
    /// each report).
    package mutating func expire(at now: Double) -> Outcome {
        guard let pending, now - pending.last > packetTimeout else { return .nothing }
        self.pending = nil
        return .error(channel: pending.channel, .messageTimeout)
    }

    package mutating func receive(_ report: [UInt8], at now: Double) -> Outcome {
        guard report.count >= 5 else { return .nothing }
        let channel = CTAPHID.channel(of: report)
        guard report.count == CTAPHID.reportSize else { return .error(channel: channel, .invalidLength) }
        guard channel != 0 else { return .error(channel: channel, .invalidChannel) }
        let isInitialization = report[4] & 0x80 != 0
        if isInitialization {
            let command = report[4] & 0x7F
            let length = Int(report[5]) << 8 | Int(report[6])
            if let pending, pending.channel != channel {
                return .error(channel: channel, .channelBusy)
            }
            if pending != nil && command != CTAPHID.Command.initialize.rawValue {
                // An initialization packet in the middle of the channel's message (INIT resynchronises).
                self.pending = nil
                return .error(channel: channel, .invalidSequence)
            }
            guard length <= CTAPHID.maximumPayload else {
                self.pending = nil
                return .error(channel: channel, .invalidLength)
            }
            let data = Array(report[7..<(7 + min(length, CTAPHID.initialData))])
            if data.count == length {
                pending = nil
                return .message(CTAPHID.Message(channel: channel, command: command, payload: data))
            }
            pending = (channel, command, length, data, 0, now)
            return .nothing
        }
        guard var message = pending else {
            // A continuation with no message begun: out of sequence.
            return .error(channel: channel, .invalidSequence)
        }
        guard message.channel == channel else { return .error(channel: channel, .channelBusy) }
        guard report[4] == message.sequence else {
            pending = nil
            return .error(channel: channel, .invalidSequence)
        }
        let wanted = min(message.length - message.payload.count, CTAPHID.continuationData)
        message.payload += report[5..<(5 + wanted)]
        message.sequence += 1
        message.last = now
        if message.payload.count == message.length {
            pending = nil
            return .message(CTAPHID.Message(channel: channel, command: message.command, payload: message.payload))
        }
        pending = message
        return .nothing
    }
}
