internal import CTSS2

/// A TSS2 return code with the TPM's format decoded: which layer produced it,
/// and, for TPM-layer codes, the base error with the handle / session /
/// parameter number stripped, so it can be compared with `TPM2_RC_*`.
struct ResponseCode: Equatable, CustomStringConvertible {
    let raw: TSS2_RC

    init(_ raw: TSS2_RC) { self.raw = raw }

    var isSuccess: Bool { raw == ts_RC_SUCCESS }

    /// The layer byte (0 = the TPM itself, 7 = ESYS, 10 = TCTI, ...).
    var layer: TSS2_RC { raw & ts_RC_LAYER_MASK }

    var isFromTPM: Bool { layer == ts_TPM_RC_LAYER }
    var isFromTCTI: Bool { layer == ts_TCTI_RC_LAYER }

    /// For TPM-layer codes: the base code. Format-one codes carry a handle,
    /// session or parameter number in bits 6 and 8-11; `& 0xbf` keeps the
    /// error number and the format bit. Format-zero codes (VER1 / WARN) are
    /// kept whole apart from the layer.
    var base: TSS2_RC {
        let code = raw & ~ts_RC_LAYER_MASK
        if code & ts_RC_FMT1 != 0 { return code & 0xbf }
        return code
    }

    /// For non-TPM layers: the TSS2_BASE_RC_* value.
    var tssBase: TSS2_RC { raw & 0xffff }

    /// Whether the code says the transport failed: the TPM (or swtpm) cannot
    /// be reached any more.
    var isTransportFailure: Bool {
        guard !isFromTPM else { return false }
        return tssBase == ts_BASE_RC_IO_ERROR || tssBase == ts_BASE_RC_NO_CONNECTION
            || (isFromTCTI && tssBase == ts_BASE_RC_TRY_AGAIN)
    }

    /// Tss2_RC_Decode's text, e.g. "tpm:session(1):the authorization HMAC check failed...".
    var text: String {
        guard let cString = Tss2_RC_Decode(raw) else { return "unknown TSS2 error" }
        return String(cString: cString)
    }

    var description: String {
        "0x" + String(raw, radix: 16) + " (" + text + ")"
    }
}
