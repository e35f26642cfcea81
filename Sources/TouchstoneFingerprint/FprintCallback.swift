internal import CFPrint

/// Carries a Swift closure through a C `gpointer` for one GAsyncReadyCallback.
/// Retained when handed to libfprint, released when the callback runs.
final class FprintCallback {
    private let handler: (OpaquePointer) -> Void

    init(_ handler: @escaping (OpaquePointer) -> Void) {
        self.handler = handler
    }

    /// A +1 pointer for libfprint's `user_data`.
    var retainedPointer: UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }

    /// The C callback libfprint calls when an async call finishes (on the
    /// libfprint thread); it consumes the +1 reference.
    static let trampoline: GAsyncReadyCallback = { _, result, data in
        let callback = Unmanaged<FprintCallback>.fromOpaque(data!).takeRetainedValue()
        callback.handler(result!)
    }
}

/// Carries the enrolment progress handler through libfprint's `progress_data`.
final class FprintProgress {
    let handler: (Int, UnsafeMutablePointer<GError>?) -> Void

    init(_ handler: @escaping (Int, UnsafeMutablePointer<GError>?) -> Void) {
        self.handler = handler
    }

    var retainedPointer: UnsafeMutableRawPointer { Unmanaged.passRetained(self).toOpaque() }

    /// FpEnrollProgress: called for each stage and each retry.
    static let trampoline: FpEnrollProgress = { _, completed, _, data, error in
        Unmanaged<FprintProgress>.fromOpaque(data!).takeUnretainedValue().handler(Int(completed), error)
    }

    /// GDestroyNotify for `progress_data`: drops the reference.
    static let release: GDestroyNotify = { data in
        Unmanaged<FprintProgress>.fromOpaque(data!).release()
    }
}
