internal import CTSS2
import Foundation
import TouchstonePOSIX

/// An open TCTI plus the ESYS context on top of it. Owns both and frees both.
///
/// Every command ESYS sends passes through a small counting TCTI that wraps
/// the real one, so benchmarks and tests can report exact TPM command counts.
final class TCTIConnection {
    let esys: OpaquePointer
    private let inner: OpaquePointer
    private let counting: UnsafeMutableRawPointer

    /// TPM commands transmitted on this connection so far.
    var commandCount: Int { counting.load(fromByteOffset: countOffset, as: Int.self) }

    init(tcti config: String) throws(TPMError) {
        try Self.precheck(config)
        _ = quietTSSLogging

        var tcti: OpaquePointer?
        let rc = ResponseCode(Tss2_TctiLdr_Initialize(config, &tcti))
        guard rc.isSuccess, let tcti else {
            // The device TCTI's open leaves its errno behind (its return
            // code does not say it): read at once.
            throw Self.connectError(config: config, rc: rc, cause: Errno.current)
        }
        inner = tcti
        counting = makeCountingTCTI(wrapping: tcti)

        var ctx: OpaquePointer?
        let erc = ResponseCode(Esys_Initialize(&ctx, OpaquePointer(counting), nil))
        guard erc.isSuccess, let ctx else {
            counting.deallocate()
            var t: OpaquePointer? = tcti
            Tss2_TctiLdr_Finalize(&t)
            throw TPMError.unreachable(detail: "ESYS could not start on '\(config)': \(erc.text)")
        }
        esys = ctx
    }

    deinit {
        var ctx: OpaquePointer? = esys
        Esys_Finalize(&ctx)
        var t: OpaquePointer? = inner
        Tss2_TctiLdr_Finalize(&t)
        counting.deallocate()
    }

    /// Clear errors before the TCTI loader's generic ones: a missing device
    /// node and a permission problem each get their own message.
    private static func precheck(_ config: String) throws(TPMError) {
        if config.isEmpty {
            // An empty or NULL config makes the loader try every TCTI it knows,
            // including anything listening on localhost:2321.
            throw TPMError.invalidArgument("empty TCTI string (use device:/dev/tpmrm0 or swtpm:path=SOCKET)")
        }
        guard config.hasPrefix("device") else { return }
        let path = config.split(separator: ":", maxSplits: 1).dropFirst().first.map(String.init) ?? "/dev/tpm0"
        guard FileManager.default.fileExists(atPath: path) else {
            throw TPMError.unreachable(detail: "no TPM device at \(path) (is a TPM 2.0 enabled in the firmware?)")
        }
        do throws(Errno) {
            _ = try valueOrErrno(retryOnInterrupt: false) { access(path, R_OK | W_OK) }
        } catch where error == .permissionDenied {
            throw TPMError.permissionDenied(path: path)
        } catch {
            // Anything else the TCTI loader's open reports in its own words.
        }
    }

    private static func connectError(config: String, rc: ResponseCode, cause: Errno) -> TPMError {
        if config.hasPrefix("swtpm") || config.hasPrefix("mssim") {
            return .unreachable(detail: "swtpm is not running at '\(config)' (start it, or run `touchstone sim start`)")
        }
        if config.hasPrefix("device") {
            if cause == .permissionDenied { return .permissionDenied(path: String(config.dropFirst("device:".count))) }
            return .unreachable(detail: "cannot open '\(config)': \(rc.text)")
        }
        return .unreachable(detail: "cannot load TCTI '\(config)': \(rc.text)")
    }
}

/// ESYS logs every failed command at ERROR level, including the ones
/// Touchstone expects (a wrong passcode), and reads TSS2_LOG when it first
/// logs. Set once per process (a global is initialised exactly once), before
/// the first connection, unless the user set TSS2_LOG to debug. Child
/// processes inherit it; the tests and the benchmark pass their own
/// environment to the tools they run.
private let quietTSSLogging: Void = { ProcessEnvironment.set("TSS2_LOG", "all+none", replacing: false) }()

// MARK: - The counting TCTI

// Memory layout of the wrapper: a TSS2_TCTI_CONTEXT_COMMON_V1 header whose
// function pointers forward to the wrapped TCTI, then the wrapped TCTI's
// pointer, then the command counter. The forwarders are C function pointers
// and cannot capture: they find the wrapped TCTI through these offsets.
private let headerSize = (MemoryLayout<TSS2_TCTI_CONTEXT_COMMON_V1>.size + 15) & ~15
private let innerOffset = headerSize
private let countOffset = headerSize + 16

private func innerTCTI(_ ctx: OpaquePointer?) -> (OpaquePointer, UnsafeMutablePointer<TSS2_TCTI_CONTEXT_COMMON_V1>) {
    let raw = UnsafeMutableRawPointer(ctx!)
    let inner = raw.load(fromByteOffset: innerOffset, as: OpaquePointer.self)
    return (inner, UnsafeMutableRawPointer(inner).assumingMemoryBound(to: TSS2_TCTI_CONTEXT_COMMON_V1.self))
}

private func makeCountingTCTI(wrapping inner: OpaquePointer) -> UnsafeMutableRawPointer {
    let raw = UnsafeMutableRawPointer.allocate(byteCount: countOffset + 16, alignment: 16)
    raw.initializeMemory(as: UInt8.self, repeating: 0, count: countOffset + 16)
    let innerCommon = UnsafeMutableRawPointer(inner).assumingMemoryBound(to: TSS2_TCTI_CONTEXT_COMMON_V1.self).pointee
    var header = TSS2_TCTI_CONTEXT_COMMON_V1()
    header.magic = innerCommon.magic
    header.version = 1
    header.transmit = { ctx, size, command in
        let raw = UnsafeMutableRawPointer(ctx!)
        raw.storeBytes(of: raw.load(fromByteOffset: countOffset, as: Int.self) + 1, toByteOffset: countOffset, as: Int.self)
        let (inner, common) = innerTCTI(ctx)
        return common.pointee.transmit(inner, size, command)
    }
    header.receive = { ctx, size, response, timeout in
        let (inner, common) = innerTCTI(ctx)
        return common.pointee.receive(inner, size, response, timeout)
    }
    header.finalize = { _ in }  // the wrapped TCTI is finalized by its owner
    header.cancel = { ctx in
        let (inner, common) = innerTCTI(ctx)
        return common.pointee.cancel(inner)
    }
    header.getPollHandles = { ctx, handles, count in
        let (inner, common) = innerTCTI(ctx)
        return common.pointee.getPollHandles(inner, handles, count)
    }
    header.setLocality = { ctx, locality in
        let (inner, common) = innerTCTI(ctx)
        return common.pointee.setLocality(inner, locality)
    }
    raw.storeBytes(of: header, as: TSS2_TCTI_CONTEXT_COMMON_V1.self)
    raw.storeBytes(of: inner, toByteOffset: innerOffset, as: OpaquePointer.self)
    return raw
}
