internal import CFPrint
import Glibc
import TouchstonePOSIX

/// One libfprint context (`FpContext`) and the devices it found, for one
/// `LibfprintReader`. Used only on the libfprint thread (hence
/// `@unchecked Sendable`: it is handed there, never touched elsewhere).
final class FprintSession: @unchecked Sendable {
    private let environment: [String: String]
    private var context: UnsafeMutablePointer<FpContext>?

    init(environment: [String: String]) {
        self.environment = environment
        FprintLog.quietLibfprint()
    }

    /// Creates the context and enumerates on first use. libfprint reads the
    /// virtual readers' environment variables during enumeration; they are
    /// set only around it, and enumeration only ever runs on the libfprint
    /// thread, so two sessions never see each other's values. Set back to
    /// empty rather than removed (libfprint takes an empty one for none):
    /// see `ProcessEnvironment`.
    private func ensureContext() -> UnsafeMutablePointer<FpContext> {
        if let context { return context }
        var saved: [String: String] = [:]
        for (name, value) in environment {
            saved[name] = ProcessEnvironment.value(name) ?? ""
            ProcessEnvironment.set(name, value)
        }
        let created = fp_context_new()!
        fp_context_enumerate(created)
        for (name, old) in saved { ProcessEnvironment.set(name, old) }
        context = created
        return created
    }

    /// The devices libfprint knows now (references owned by the context).
    func devices() -> [UnsafeMutablePointer<FpDevice>] {
        guard let array = fp_context_get_devices(ensureContext()) else { return [] }
        return (0..<Int(array.pointee.len)).compactMap { index in
            array.pointee.pdata[index].map { $0.assumingMemoryBound(to: FpDevice.self) }
        }
    }

    /// The device with this identity.
    func device(for identity: ReaderIdentity) throws(FingerprintError) -> UnsafeMutablePointer<FpDevice> {
        for device in devices() where Self.identity(of: device) == identity {
            if Self.isRemoved(device) { throw .disconnected }
            return device
        }
        throw .readerNotFound(identity)
    }

    static func identity(of device: UnsafeMutablePointer<FpDevice>) -> ReaderIdentity {
        ReaderIdentity(driver: String(cString: fp_device_get_driver(device)),
                       deviceID: String(cString: fp_device_get_device_id(device)))
    }

    static func isRemoved(_ device: UnsafeMutablePointer<FpDevice>) -> Bool {
        // g_object_get is variadic (not callable from Swift): read the
        // property through a GValue. G_TYPE_BOOLEAN is fundamental type 5.
        var value = GValue()
        g_value_init(&value, GType(5 << 2))
        defer { g_value_unset(&value) }
        device.withMemoryRebound(to: GObject.self, capacity: 1) { object in
            g_object_get_property(object, "removed", &value)
        }
        return g_value_get_boolean(&value) != 0
    }

    static func has(_ device: UnsafeMutablePointer<FpDevice>, _ feature: FpDeviceFeature) -> Bool {
        fp_device_has_feature(device, feature) != 0
    }

    static func info(of device: UnsafeMutablePointer<FpDevice>) -> ReaderInfo {
        ReaderInfo(
            identity: identity(of: device),
            name: String(cString: fp_device_get_name(device)),
            scanType: fp_device_get_scan_type(device) == FP_SCAN_TYPE_SWIPE ? .swipe : .press,
            enrollStages: Int(fp_device_get_nr_enroll_stages(device)),
            storesPrintsOnDevice: has(device, FP_DEVICE_FEATURE_STORAGE),
            canIdentify: has(device, FP_DEVICE_FEATURE_IDENTIFY))
    }

    /// Opens `device` if needed (claiming it; fprintd or another program may
    /// hold it), then calls `next` with it.
    func open(_ device: UnsafeMutablePointer<FpDevice>, for operation: FprintOperation,
              then next: @escaping (UnsafeMutablePointer<FpDevice>) -> Void) {
        if fp_device_is_open(device) != 0 {
            next(device)
            return
        }
        let callback = FprintCallback { result in
            var error: UnsafeMutablePointer<GError>?
            if fp_device_open_finish(device, result, &error) != 0 {
                if !operation.finishIfCancelled() { next(device) }
            } else {
                let failure = GLibError.take(&error)!
                if failure.meansReaderHeld {
                    operation.fail(.busy)
                } else {
                    operation.fail(failure, device: device)
                }
            }
        }
        fp_device_open(device, operation.cancellable, FprintCallback.trampoline, callback.retainedPointer)
    }

    /// Closes every open device, then calls `done`. Never throws: a reader
    /// that fails to close is left to libfprint.
    func closeAll(_ done: @escaping () -> Void) {
        guard context != nil else { done(); return }
        let open = devices().filter { fp_device_is_open($0) != 0 }
        var remaining = open.count
        guard remaining > 0 else { done(); return }
        for device in open {
            let callback = FprintCallback { result in
                var error: UnsafeMutablePointer<GError>?
                _ = fp_device_close_finish(device, result, &error)
                if let error { g_error_free(error) }
                remaining -= 1
                if remaining == 0 { done() }
            }
            fp_device_close(device, nil, FprintCallback.trampoline, callback.retainedPointer)
        }
    }

    /// Closes the devices and drops the context (a no-op once done), then
    /// calls `done`.
    func tearDown(_ done: @escaping () -> Void = {}) {
        closeAll { [self] in
            if let context {
                g_object_unref(UnsafeMutableRawPointer(context))
                self.context = nil
            }
            done()
        }
    }
}
