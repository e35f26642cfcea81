import Glibc
import Synchronization
import TouchstonePOSIX

/// CTAPHID over UDP on the loopback (the convention of the Solo and
/// Trezor emulators, what python-fido2 and the tests speak): each datagram
/// one 64-byte report, both ways, answered to the address it came from.
package final class CTAPHIDUDPCarrier: CTAPHIDCarrier {
    /// Why the carrier could not start.
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

    private let socket: CInt
    private let owner: Mutex<OwnedDescriptor?>
    package let port: UInt16

    package init(host: String, port: UInt16) throws(StartFailure) {
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
    }

    /// Closes the socket (after the server's `run` returned).
    package func close() { owner.withLock { $0 = nil } }

    package func receive(timeoutMilliseconds: Int32, wake: CInt) -> (report: [UInt8], from: sockaddr_in)? {
        var pollers = [pollfd(fd: socket, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        guard poll(&pollers, 2, timeoutMilliseconds) > 0, pollers[0].revents & Int16(POLLIN) != 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 2048)
        var from = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let count = buffer.withUnsafeMutableBytes { bytes in
            withUnsafeMutablePointer(to: &from) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { recvfrom(socket, bytes.baseAddress, bytes.count, 0, $0, &length) }
            }
        }
        guard count >= 0 else { return nil }
        return (Array(buffer[0..<count]), from)
    }

    package func send(_ report: [UInt8], to peer: sockaddr_in) {
        var peer = peer
        _ = report.withUnsafeBytes { bytes in
            withUnsafePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { sendto(socket, bytes.baseAddress, bytes.count, 0, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }
}
