import Foundation
import Glibc
import Synchronization
import TouchstonePOSIX

/// CTAPHID over UDP on the loopback (the convention of the Solo and
/// Trezor emulators, what python-fido2 and the tests speak): each datagram
/// one 64-byte report, both ways. One thread reads the socket, runs
/// `CTAPHIDChannels`, hands CBOR requests to the authenticator (one at a
/// time), sends KEEPALIVE every 100 ms while one is carried out, and
/// cancels it on CTAPHID_CANCEL. A datagram of another size, garbage, a
/// message that stops arriving: an error to its sender, and the next
/// client is served.
package final class CTAPHIDUDPServer: Sendable {
    /// Why the server could not start.
    package enum StartFailure: Error, CustomStringConvertible {
        case notLoopback(String)
        case socket(Errno)

        package var description: String {
            switch self {
            case .notLoopback(let host): "\(host) is not a loopback IPv4 address: the UDP transport listens on 127.0.0.0/8 only"
            case .socket(let errno): "the UDP socket: \(errno)"
            }
        }
    }

    /// The KEEPALIVE interval (CTAP 2.1, 11.2.9.2.1: 100 ms).
    package static let keepaliveInterval = 0.1
    /// The device version INIT tells.
    package static let deviceVersion: (major: UInt8, minor: UInt8, build: UInt8) = (0, 3, 0)

    private let socket: CInt
    private let owner: Mutex<OwnedDescriptor?>
    package let port: UInt16
    private let authenticator: CTAP2Authenticator
    private let stopped = Atomic<Bool>(false)
    /// The answer of the request in progress: its generation and bytes.
    private let answers = Mutex<[(generation: Int, answer: [UInt8])]>([])

    package init(host: String, port: UInt16, authenticator: CTAP2Authenticator) throws(StartFailure) {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host == "localhost" ? "127.0.0.1" : host, &address.sin_addr) == 1,
              UInt32(bigEndian: address.sin_addr.s_addr) >> 24 == 127 else { throw .notLoopback(host) }
        let descriptor: OwnedDescriptor
        do { descriptor = try OwnedDescriptor.socket(AF_INET, CInt(SOCK_DGRAM.rawValue)) } catch { throw .socket(error) }
        let raw = descriptor.rawValue
        do {
            _ = try valueOrErrno(retryOnInterrupt: false) {
                withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(raw, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
            }
        } catch { throw .socket(error) }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        do {
            _ = try valueOrErrno(retryOnInterrupt: false) {
                withUnsafeMutablePointer(to: &bound) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(raw, $0, &length) } }
            }
        } catch { throw .socket(error) }
        self.port = UInt16(bigEndian: bound.sin_port)
        socket = raw
        owner = Mutex(descriptor)
        self.authenticator = authenticator
    }

    /// Ends `run` within a poll interval.
    package func stop() { stopped.store(true, ordering: .releasing) }

    /// Serves until `stop()`; the socket is closed when it returns.
    package func run() {
        var channels = CTAPHIDChannels(identity: .init(deviceVersion: Self.deviceVersion, capabilities: 0x01 | 0x04 | 0x08))
        var peers: [UInt32: sockaddr_in] = [:]
        var transaction: Transaction?
        var generation = 0
        var buffer = [UInt8](repeating: 0, count: 2048)
        defer { owner.withLock { $0 = nil } }
        while !stopped.load(ordering: .acquiring) {
            var poller = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 20)
            let now = Self.now()
            var actions: [(CTAPHIDChannels.Action, sockaddr_in?)] = []
            if ready > 0, poller.revents & Int16(POLLIN) != 0 {
                var from = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let count = buffer.withUnsafeMutableBytes { bytes in
                    withUnsafeMutablePointer(to: &from) {
                        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, bytes.baseAddress, bytes.count, 0, $0, &length) }
                    }
                }
                if count >= 0 {
                    let report = Array(buffer[0..<count])
                    if report.count >= 4 { peers[CTAPHID.channel(of: report)] = from }
                    actions += channels.receive(report, at: now).map { ($0, from) }
                }
            } else {
                actions += channels.expire(at: now).map { ($0, nil) }
            }
            for (action, from) in actions {
                switch action {
                case .send(let message):
                    send(message, to: from ?? peers[message.channel])
                case .dispatch(let message):
                    generation += 1
                    let mine = generation
                    let request = message.payload
                    let task = Task { [self] in
                        let answer = await authenticator.handle(request)
                        answers.withLock { $0.append((mine, answer)) }
                    }
                    transaction = Transaction(channel: message.channel, command: message.command, peer: from, generation: mine, task: task,
                                              awaitsUser: CTAP2Authenticator.awaitsUser(request), lastKeepalive: now)
                case .cancel(let channel):
                    guard let current = transaction, current.channel == channel else { break }
                    current.task.cancel()
                    send(CTAPHID.Message(channel: channel, command: current.command, payload: [CTAP2.Status.keepaliveCancel.rawValue]), to: current.peer)
                    channels.finished(channel)
                    transaction = nil
                }
            }
            let finished = answers.withLock { list -> [(generation: Int, answer: [UInt8])] in
                defer { list.removeAll() }
                return list
            }
            if let current = transaction {
                if let done = finished.first(where: { $0.generation == current.generation }) {
                    send(CTAPHID.Message(channel: current.channel, command: current.command, payload: done.answer), to: current.peer)
                    channels.finished(current.channel)
                    transaction = nil
                } else if now - current.lastKeepalive >= Self.keepaliveInterval {
                    let status: CTAPHID.KeepaliveStatus = current.awaitsUser ? .userPresenceNeeded : .processing
                    send(CTAPHID.Message(channel: current.channel, .keepalive, [status.rawValue]), to: current.peer)
                    transaction?.lastKeepalive = now
                }
            }
        }
        transaction?.task.cancel()
    }

    private struct Transaction {
        let channel: UInt32
        let command: UInt8
        let peer: sockaddr_in?
        let generation: Int
        let task: Task<Void, Never>
        let awaitsUser: Bool
        var lastKeepalive: Double
    }

    private func send(_ message: CTAPHID.Message, to peer: sockaddr_in?) {
        guard var peer else { return }
        for report in CTAPHID.reports(for: message) {
            // A client gone: its datagrams are lost, as over HID.
            _ = report.withUnsafeBytes { bytes in
                withUnsafePointer(to: &peer) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(socket, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
        }
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
