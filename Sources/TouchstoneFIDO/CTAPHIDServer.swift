import Foundation
import Glibc
import Synchronization
import TouchstonePOSIX
import TouchstoneSecure

/// What carries CTAPHID's 64-byte reports between the authenticator and
/// its clients: a loopback UDP socket (`CTAPHIDUDPCarrier`), or the
/// kernel's uhid device (`UHIDCarrier`).
package protocol CTAPHIDCarrier: Sendable {
    /// Who sent a report, to answer: an address, or the one host.
    associatedtype Peer: Sendable
    /// The next report and its sender; nil when none came within
    /// `timeoutMilliseconds`, when `wake` became readable (the server has
    /// an answer to send), or when something that is no report came.
    func receive(timeoutMilliseconds: Int32, wake: CInt) -> (report: [UInt8], from: Peer)?
    /// Sends one report (a client gone loses it, as over HID).
    func send(_ report: [UInt8], to peer: Peer)
    /// Ends the carrier (after the server's `run` returned).
    func close()
}

/// CTAPHID served over a carrier: one thread reads it, runs
/// `CTAPHIDChannels`, hands CBOR requests to the authenticator (one at a
/// time), sends KEEPALIVE every 100 ms while one is carried out, and
/// cancels it on CTAPHID_CANCEL. A bad report, garbage, a message that
/// stops arriving: an error to its sender, and the next client is served.
package final class CTAPHIDServer<Carrier: CTAPHIDCarrier>: Sendable {
    /// The KEEPALIVE interval (CTAP 2.1, 11.2.9.2.1: 100 ms).
    package static var keepaliveInterval: Double { 0.1 }
    /// The device version INIT tells.
    package static var deviceVersion: (major: UInt8, minor: UInt8, build: UInt8) { (0, 3, 0) }

    package let carrier: Carrier
    private let authenticator: CTAP2Authenticator
    private let stopped = Atomic<Bool>(false)
    /// Answers of requests carried out: their generation and bytes.
    private let answers = Mutex<[(generation: Int, answer: [UInt8])]>([])
    /// A pipe whose byte wakes the loop when an answer is ready (it would
    /// otherwise wait for the next report or the poll's 20 ms).
    private let wake: Mutex<DescriptorPair>
    private let wakeRead: CInt
    private let wakeWrite: CInt

    package init(carrier: Carrier, authenticator: CTAP2Authenticator) throws(Errno) {
        self.carrier = carrier
        self.authenticator = authenticator
        let pair = try OwnedDescriptor.pipe()
        wakeRead = pair.read.rawValue
        wakeWrite = pair.write.rawValue
        _ = fcntl(wakeRead, F_SETFL, O_NONBLOCK)
        wake = Mutex(pair)
    }

    /// Ends `run` within a poll interval.
    package func stop() { stopped.store(true, ordering: .releasing) }

    /// Serves on a thread of its own named `name`, then closes the carrier.
    package func start(name: String) {
        startDetachedThread(name: name) { [self] in
            run()
            carrier.close()
        }
    }

    private struct Transaction {
        let channel: UInt32
        let command: UInt8
        let peer: Carrier.Peer?
        let generation: Int
        let task: Task<Void, Never>
        let awaitsUser: Bool
        var lastKeepalive: Double
    }

    /// Serves until `stop()`.
    package func run() {
        var channels = CTAPHIDChannels(identity: .init(deviceVersion: Self.deviceVersion, capabilities: 0x01 | 0x04 | 0x08))
        var peers: [UInt32: Carrier.Peer] = [:]
        var transaction: Transaction?
        var generation = 0
        while !stopped.load(ordering: .acquiring) {
            let received = carrier.receive(timeoutMilliseconds: 20, wake: wakeRead)
            let now = Self.now()
            var actions: [(CTAPHIDChannels.Action, Carrier.Peer?)] = []
            if let (report, from) = received {
                if report.count >= 4 { peers[CTAPHID.channel(of: report)] = from }
                actions += channels.receive(report, at: now).map { ($0, from) }
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
                        var byte: UInt8 = 1
                        _ = write(wakeWrite, &byte, 1)
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
            var drained = [UInt8](repeating: 0, count: 64)
            while read(wakeRead, &drained, drained.count) > 0 {}
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

    private func send(_ message: CTAPHID.Message, to peer: Carrier.Peer?) {
        guard let peer else { return }
        for report in CTAPHID.reports(for: message) { carrier.send(report, to: peer) }
    }

    private static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }
}
