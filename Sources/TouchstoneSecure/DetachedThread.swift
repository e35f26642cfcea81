#if canImport(Glibc)
import Glibc
#endif
import TouchstonePOSIX

/// Runs `body` on a new detached POSIX thread named `name` (at most 15
/// bytes show), with a stack of `stackSize` bytes: Foundation's `Thread`
/// without Foundation, for the modules a small client links.
package func startDetachedThread(name: String, stackSize: Int = 256 << 10, _ body: @escaping @Sendable () -> Void) {
    final class Start {
        let name: String
        let body: @Sendable () -> Void
        init(name: String, body: @escaping @Sendable () -> Void) { (self.name, self.body) = (name, body) }
    }
    let start = Unmanaged.passRetained(Start(name: name, body: body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    defer { pthread_attr_destroy(&attributes) }
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    pthread_attr_setstacksize(&attributes, max(stackSize, Int(PTHREAD_STACK_MIN)))
    var thread = pthread_t()
    let rc = pthread_create(&thread, &attributes, { raw in
        let start = Unmanaged<Start>.fromOpaque(raw!).takeRetainedValue()
        // pthread_setname_np's way, without _GNU_SOURCE; a name is no
        // reason to fail.
        if let comm = try? OwnedDescriptor.open("/proc/thread-self/comm", O_WRONLY) {
            let name = Array(start.name.utf8.prefix(15))
            _ = try? name.withUnsafeBytes { bytes in try comm.write(bytes) }
        }
        start.body()
        return nil
    }, start)
    // pthread_create returns its error number rather than setting errno.
    precondition(rc == 0, "pthread_create failed: \(Errno(rawValue: rc)) (errno \(rc))")
}
