import TouchstoneCLISupport
import Foundation
import Touchstone
import TouchstonePOSIX

/// The secret of `add` and `update`: every byte of stdin up to EOF, 1 byte
/// to 1 MiB. Read straight into wiped memory; refused before anything is
/// stored when empty or too long.
enum SecretInput {
    static let maximumSize = Keychain.maximumSecretSize

    static func readStandardInput() throws -> SecureBytes {
        if isatty(0) == 1 {
            Output.progress("reading the secret from stdin: type it, then Ctrl-D (it is echoed; prefer a pipe)")
        }
        let buffer = SecureBytes(count: maximumSize + 1)
        var count = 0
        while count <= maximumSize {
            let n: Int
            do {
                n = try buffer.withUnsafeMutableBytes { bytes in
                    try valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true) {
                        read(0, bytes.baseAddress! + count, bytes.count - count)
                    }
                }
            } catch {
                throw CLIFailure(.failure, "cannot read the secret from stdin: \(error)")
            }
            if n == 0 { break }
            count += n
        }
        guard count > 0 else {
            throw CLIFailure(.failure, "the secret is empty: it is read from stdin up to EOF, 1 byte to 1 MiB",
                             hint: "printf '%s' \"$secret\" | touchstone add SERVICE ACCOUNT")
        }
        guard count <= maximumSize else {
            throw CLIFailure(.failure, "the secret is larger than 1 MiB (\(maximumSize) bytes); nothing was stored")
        }
        return buffer.withUnsafeBytes { SecureBytes(copying: UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
    }
}
