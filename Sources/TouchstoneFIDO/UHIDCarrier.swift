import Glibc
import Synchronization
import TouchstonePOSIX

/// CTAPHID over the kernel's uhid: a virtual USB HID FIDO device
/// (`UHIDEvent.create`) that browsers and libfido2 find as a hidraw node.
/// Reports from the host arrive as UHID_OUTPUT events; answers go as
/// UHID_INPUT2. One host: the peer is the device itself.
package final class UHIDCarrier: CTAPHIDCarrier {
    /// Why the device could not be made.
    package enum StartFailure: Error, CustomStringConvertible {
        case open(String, Errno)
        case create(Errno)

        package var description: String {
            switch self {
            case .open(let path, .noSuchFileOrDirectory):
                "no \(path): the kernel has no uhid (CONFIG_UHID), or its module is not loaded (sudo modprobe uhid)"
            case .open(let path, .permissionDenied):
                "\(path) is not writable by this user (it is root's: whoever writes it can make any HID device, a keyboard too); grant it on purpose, as docs/fido.md says"
            case .open(let path, let errno): "cannot open \(path): \(errno)"
            case .create(let errno): "the kernel refused the virtual device (UHID_CREATE2): \(errno)"
            }
        }
    }

    private let device: CInt
    private let owner: Mutex<OwnedDescriptor?>

    /// Makes the device on `path` (/dev/uhid).
    package init(path: String = "/dev/uhid", name: String = "Touchstone FIDO authenticator") throws(StartFailure) {
        let descriptor: OwnedDescriptor
        do { descriptor = try OwnedDescriptor.open(path, O_RDWR) } catch { throw .open(path, error) }
        let raw = descriptor.rawValue
        let create = UHIDEvent.create(name: name, vendor: 0x1209, product: 0x7457)
        let written: Int
        do { written = try valueOrErrno(retryOnInterrupt: true) { write(raw, create, create.count) } } catch { throw .create(error) }
        guard written == create.count else { throw .create(Errno(rawValue: EIO)) }
        device = raw
        owner = Mutex(descriptor)
    }

    /// Destroys the device and closes /dev/uhid.
    package func close() {
        let destroy = UHIDEvent.destroy()
        _ = write(device, destroy, destroy.count)
        owner.withLock { $0 = nil }
    }

    package func receive(timeoutMilliseconds: Int32, wake: CInt) -> (report: [UInt8], from: Void)? {
        var pollers = [pollfd(fd: device, events: Int16(POLLIN), revents: 0), pollfd(fd: wake, events: Int16(POLLIN), revents: 0)]
        guard poll(&pollers, 2, timeoutMilliseconds) > 0, pollers[0].revents & Int16(POLLIN) != 0 else { return nil }
        var buffer = [UInt8](repeating: 0, count: UHIDEvent.size)
        let count = buffer.withUnsafeMutableBytes { read(device, $0.baseAddress, $0.count) }
        guard count > 0, let event = UHIDEvent.decode(Array(buffer[0..<count])) else { return nil }
        switch event {
        case .output(let report):
            return (report, ())
        case .getReport, .setReport:
            if let answer = UHIDEvent.refuse(event) { _ = write(device, answer, answer.count) }
            return nil
        default:
            return nil
        }
    }

    package func send(_ report: [UInt8], to peer: Void) {
        let event = UHIDEvent.input(report)
        _ = write(device, event, event.count)
    }
}
