internal import CFPrint

/// The libfprint calls behind each `LibfprintReader` operation. Every
/// function runs on the libfprint thread and ends `operation` exactly once,
/// in a libfprint callback or before reaching libfprint.
enum FprintRequests {
    static func enroll(_ finger: Finger, username: String, on device: UnsafeMutablePointer<FpDevice>,
                       operation: FprintOperation) {
        let identity = FprintSession.identity(of: device)
        // A floating reference: fp_device_enroll sinks it.
        let template = fp_print_new(device)!
        fp_print_set_finger(template, FpFinger(rawValue: finger.libfprintValue))
        fp_print_set_username(template, username)
        let progress = FprintProgress { completed, error in
            if let error {
                let hint = GLibError(error).retryHint ?? .tryAgain
                operation.emit(.retry(hint))
            } else {
                operation.emit(.stage(completed: completed, total: Int(fp_device_get_nr_enroll_stages(device))))
            }
        }
        let callback = FprintCallback { result in
            var error: UnsafeMutablePointer<GError>?
            guard let print = fp_device_enroll_finish(device, result, &error) else {
                operation.fail(GLibError.take(&error)!, device: device)
                return
            }
            defer { g_object_unref(UnsafeMutableRawPointer(print)) }
            do throws(FingerprintError) {
                let data = try PrintCodec.serialize(print)
                operation.succeed(.enrolled(EnrolledPrint(finger: finger, reader: identity, data: data)))
            } catch {
                operation.fail(error)
            }
        }
        fp_device_enroll(device, template, operation.cancellable,
                         FprintProgress.trampoline, progress.retainedPointer, FprintProgress.release,
                         FprintCallback.trampoline, callback.retainedPointer)
    }

    /// Verifies a touch against `enrolled`. With `others` (even empty), the
    /// outcome is `.identified(index)` instead of `.match`: 0 for
    /// `enrolled`, n for `others[n - 1]` when the scanned print equals it
    /// exactly (see `LibfprintReader.verifyAny`), nil for no match.
    static func verify(_ enrolled: EnrolledPrint, alsoComparing others: [EnrolledPrint]? = nil,
                       on device: UnsafeMutablePointer<FpDevice>, operation: FprintOperation) {
        var loaded: [OpaquePointer] = []
        do {
            for print in [enrolled] + (others ?? []) {
                loaded.append(try loadPrint(print.data, finger: print.finger, reader: print.reader, for: device))
            }
        } catch {
            for print in loaded { g_object_unref(UnsafeMutableRawPointer(print)) }
            operation.fail(error)
            return
        }
        verifyOnce(loaded[0], others: Array(loaded.dropFirst()), reportsIndex: others != nil,
                   on: device, operation: operation)
    }

    /// One verify attempt; a retry prompt reports the hint and starts the
    /// next attempt (libfprint ends a verify on a retry, as fprintd knows).
    /// Consumes the references to `print` and `others`.
    private static func verifyOnce(_ print: OpaquePointer, others: [OpaquePointer], reportsIndex: Bool,
                                   on device: UnsafeMutablePointer<FpDevice>, operation: FprintOperation) {
        func release() {
            for held in [print] + others { g_object_unref(UnsafeMutableRawPointer(held)) }
        }
        let callback = FprintCallback { result in
            var error: UnsafeMutablePointer<GError>?
            var match: gboolean = 0
            var scanned: OpaquePointer?
            let ok = fp_device_verify_finish(device, result, &match, &scanned, &error)
            defer { if let scanned { g_object_unref(UnsafeMutableRawPointer(scanned)) } }
            if ok != 0 {
                var index: Int? = match != 0 ? 0 : nil
                if index == nil, let scanned {
                    index = others.firstIndex { fp_print_equal(scanned, $0) != 0 }.map { $0 + 1 }
                }
                release()
                operation.succeed(reportsIndex ? .identified(index) : .match(match != 0))
                return
            }
            let failure = GLibError.take(&error)!
            if let hint = failure.retryHint, !operation.isCancelled {
                operation.emit(.retry(hint))
                verifyOnce(print, others: others, reportsIndex: reportsIndex, on: device, operation: operation)
                return
            }
            release()
            if failure.isNotFound {
                operation.succeed(reportsIndex ? .identified(nil) : .match(false))
                return
            }
            operation.fail(failure, device: device)
        }
        fp_device_verify(device, print, operation.cancellable, nil, nil, nil,
                         FprintCallback.trampoline, callback.retainedPointer)
    }

    static func identify(_ prints: [EnrolledPrint], on device: UnsafeMutablePointer<FpDevice>,
                         operation: FprintOperation) {
        guard FprintSession.has(device, FP_DEVICE_FEATURE_IDENTIFY) else {
            operation.fail(.notSupported(operation: "identify"))
            return
        }
        // The gallery owns one reference to each print.
        let gallery = g_ptr_array_new_with_free_func(g_object_unref)!
        var pointers: [OpaquePointer] = []
        for enrolled in prints {
            do {
                let print = try loadPrint(enrolled.data, finger: enrolled.finger, reader: enrolled.reader, for: device)
                g_ptr_array_add(gallery, UnsafeMutableRawPointer(print))
                pointers.append(print)
            } catch {
                g_ptr_array_unref(gallery)
                operation.fail(error)
                return
            }
        }
        identifyOnce(gallery, pointers, on: device, operation: operation)
    }

    /// One identify attempt; retries go on like `verifyOnce`. Consumes the
    /// reference to `gallery`.
    private static func identifyOnce(_ gallery: UnsafeMutablePointer<GPtrArray>, _ pointers: [OpaquePointer],
                                     on device: UnsafeMutablePointer<FpDevice>, operation: FprintOperation) {
        let callback = FprintCallback { result in
            var error: UnsafeMutablePointer<GError>?
            var match: OpaquePointer?
            var scanned: OpaquePointer?
            let ok = fp_device_identify_finish(device, result, &match, &scanned, &error)
            if let scanned { g_object_unref(UnsafeMutableRawPointer(scanned)) }
            if ok != 0 {
                // libfprint returns the gallery entry that matched.
                let index = match.flatMap { found in
                    pointers.firstIndex(of: found) ?? pointers.firstIndex { fp_print_equal($0, found) != 0 }
                }
                if let match { g_object_unref(UnsafeMutableRawPointer(match)) }
                g_ptr_array_unref(gallery)
                operation.succeed(.identified(index))
                return
            }
            if let match { g_object_unref(UnsafeMutableRawPointer(match)) }
            let failure = GLibError.take(&error)!
            if let hint = failure.retryHint, !operation.isCancelled {
                operation.emit(.retry(hint))
                identifyOnce(gallery, pointers, on: device, operation: operation)
                return
            }
            g_ptr_array_unref(gallery)
            if failure.isNotFound {
                operation.succeed(.identified(nil))
                return
            }
            operation.fail(failure, device: device)
        }
        fp_device_identify(device, gallery, operation.cancellable, nil, nil, nil,
                           FprintCallback.trampoline, callback.retainedPointer)
    }

    static func list(on device: UnsafeMutablePointer<FpDevice>, operation: FprintOperation) {
        guard FprintSession.has(device, FP_DEVICE_FEATURE_STORAGE_LIST) else {
            operation.fail(.notSupported(operation: "listing prints"))
            return
        }
        let identity = FprintSession.identity(of: device)
        let callback = FprintCallback { result in
            var error: UnsafeMutablePointer<GError>?
            guard let array = fp_device_list_prints_finish(device, result, &error) else {
                operation.fail(GLibError.take(&error)!, device: device)
                return
            }
            defer { g_ptr_array_unref(array) }
            var listed: [DevicePrint] = []
            for index in 0..<Int(array.pointee.len) {
                guard let raw = array.pointee.pdata[index] else { continue }
                let print = OpaquePointer(raw)
                do throws(FingerprintError) {
                    listed.append(DevicePrint(reader: identity, finger: PrintCodec.finger(of: print),
                                              username: PrintCodec.username(of: print),
                                              data: try PrintCodec.serialize(print)))
                } catch {
                    operation.fail(error)
                    return
                }
            }
            operation.succeed(.listed(listed))
        }
        fp_device_list_prints(device, operation.cancellable, FprintCallback.trampoline, callback.retainedPointer)
    }

    static func delete(_ stored: DevicePrint, on device: UnsafeMutablePointer<FpDevice>,
                       operation: FprintOperation) {
        guard FprintSession.has(device, FP_DEVICE_FEATURE_STORAGE_DELETE) else {
            operation.fail(.notSupported(operation: "deleting prints"))
            return
        }
        let print: OpaquePointer
        do {
            print = try loadPrint(stored.data, finger: stored.finger, reader: stored.reader, for: device)
        } catch {
            operation.fail(error)
            return
        }
        let callback = FprintCallback { result in
            defer { g_object_unref(UnsafeMutableRawPointer(print)) }
            var error: UnsafeMutablePointer<GError>?
            if fp_device_delete_print_finish(device, result, &error) != 0 {
                operation.succeed(.done)
            } else {
                operation.fail(GLibError.take(&error)!, device: device)
            }
        }
        fp_device_delete_print(device, print, operation.cancellable, FprintCallback.trampoline, callback.retainedPointer)
    }

    /// Deserializes a stored print for use on `device`, refusing prints made
    /// on another reader. Returns an owned reference.
    private static func loadPrint(_ data: [UInt8], finger: Finger?, reader: ReaderIdentity,
                                  for device: UnsafeMutablePointer<FpDevice>) throws(FingerprintError) -> OpaquePointer {
        let identity = FprintSession.identity(of: device)
        guard reader == identity else { throw .wrongReader(expected: identity, actual: reader) }
        let print = try PrintCodec.deserialize(data, finger: finger)
        guard fp_print_compatible(print, device) != 0 else {
            let actual = ReaderIdentity(driver: fp_print_get_driver(print).map { String(cString: $0) } ?? "?",
                                        deviceID: fp_print_get_device_id(print).map { String(cString: $0) } ?? "?")
            g_object_unref(UnsafeMutableRawPointer(print))
            throw .wrongReader(expected: identity, actual: actual)
        }
        return print
    }
}
