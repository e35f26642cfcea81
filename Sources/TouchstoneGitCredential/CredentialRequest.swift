import FoundationEssentials
import Glibc
import Touchstone
import TouchstoneCLISupport
import TouchstonePOSIX

/// What git sends on stdin (git-credential(1), "INPUT/OUTPUT FORMAT"):
/// `key=value` lines up to a blank line or EOF.
///
/// Read whole into wiped memory before anything is done, and checked whole:
/// a malformed or oversized request is refused (exit 1, the line named on
/// stderr) before the vault is opened, so it can never cost a stored item.
/// Rules:
/// - every line is `key=value` (the value is everything after the first
///   `=`); a line ending in CR LF counts as ending in LF, as git reads it;
/// - `protocol`, `host`, `path` and `username` are text: UTF-8, no control,
///   bidirectional or replacement characters, at most 1024 bytes each (they
///   become the item's service and account); an empty one counts as absent;
/// - `password` is bytes (no NUL), at most 1 MiB, kept in `SecureBytes`;
///   an empty one counts as absent;
/// - a key given twice keeps its last value, as git does;
/// - every other key (`url`, `capability[]`, `wwwauth[]`,
///   `password_expiry_utc`, `oauth_refresh_token`, `authtype`,
///   `credential`, `state[]`, ...) is ignored: this helper announces no
///   capability, stores nothing but the password, and matches on protocol,
///   host, path and username alone;
/// - the whole request is at most `maximumSize` bytes.
struct CredentialRequest {
    var `protocol`: String?
    var host: String?
    var path: String?
    var username: String?
    var password: SecureBytes?

    /// The longest request read: a 1 MiB password and room for the rest.
    static let maximumSize = Keychain.maximumSecretSize + 64 * 1024
    /// The longest protocol, host, path or username, in UTF-8 bytes.
    static let maximumTextBytes = 1024

    /// Reads stdin up to a blank line or EOF and parses it.
    static func readStandardInput() throws(CLIFailure) -> CredentialRequest {
        let buffer = SecureBytes(count: maximumSize + 1)
        let count = try buffer.withUnsafeMutableBytes { readRequest(into: $0) }.get()
        var request: Result<CredentialRequest, CLIFailure> = .success(CredentialRequest())
        buffer.withUnsafeBytes { bytes in
            request = Result { () throws(CLIFailure) in try parse(UnsafeRawBufferPointer(rebasing: bytes.prefix(count))) }
        }
        return try request.get()
    }

    /// Reads stdin into `bytes` up to the end of the request: how many
    /// bytes it has (without the blank line that ends it).
    private static func readRequest(into bytes: UnsafeMutableRawBufferPointer) -> Result<Int, CLIFailure> {
        var count = 0
        while count < bytes.count {
            let n: Int
            do {
                n = try valueOrErrno(retryOnInterrupt: true, descriptorMayBeClosed: true) {
                    read(0, bytes.baseAddress! + count, bytes.count - count)
                }
            } catch {
                return .failure(CLIFailure(.failure, "cannot read git's request from stdin: \(error)"))
            }
            if n == 0 { break }
            let start = max(count - 1, 0)
            count += n
            // A blank line ends the request: "\n" first, or "\n\n".
            if bytes[0] == 0x0A { return .success(0) }
            if let end = (start..<count - 1).first(where: { bytes[$0] == 0x0A && bytes[$0 + 1] == 0x0A }) {
                return .success(end + 1)
            }
        }
        guard count < bytes.count else {
            return .failure(CLIFailure(.failure, "git's request is larger than \(maximumSize) bytes; nothing was changed"))
        }
        return .success(count)
    }

    /// Parses the request's bytes (without the blank line that ends it).
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(CLIFailure) -> CredentialRequest {
        var request = CredentialRequest()
        var lineNumber = 0
        var start = 0
        while start < bytes.count {
            lineNumber += 1
            var end = start
            while end < bytes.count && bytes[end] != 0x0A { end += 1 }
            let next = end + 1
            if end > start && bytes[end - 1] == 0x0D { end -= 1 }
            let line = UnsafeRawBufferPointer(rebasing: bytes[start..<end])
            start = next
            if line.isEmpty { break }  // a blank line (CR LF): the end
            guard let equals = line.firstIndex(of: 0x3D), equals > 0 else {
                throw malformed(lineNumber, "is not key=value")
            }
            let keyBytes = UnsafeRawBufferPointer(rebasing: line[..<equals])
            let value = UnsafeRawBufferPointer(rebasing: line[(equals + 1)...])
            guard keyBytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw malformed(lineNumber, "has a key that is not printable ASCII")
            }
            let key = String(decoding: keyBytes, as: UTF8.self)
            switch key {
            case "password":
                guard !value.contains(0) else { throw malformed(lineNumber, "has a NUL byte in the password") }
                request.password = value.isEmpty ? nil : SecureBytes(copying: value)
            case "protocol": request.protocol = try text(value, key, lineNumber)
            case "host": request.host = try text(value, key, lineNumber)
            case "path": request.path = try text(value, key, lineNumber)
            case "username": request.username = try text(value, key, lineNumber)
            default: continue  // see the type's comment
            }
        }
        return request
    }

    /// A text value, checked; nil when empty.
    private static func text(_ value: UnsafeRawBufferPointer, _ key: String, _ line: Int) throws(CLIFailure) -> String? {
        if value.isEmpty { return nil }
        guard value.count <= maximumTextBytes else {
            throw malformed(line, "has a \(key) of \(value.count) bytes; at most \(maximumTextBytes) are allowed")
        }
        guard let text = String(validating: value, as: UTF8.self) else {
            throw malformed(line, "has a \(key) that is not valid UTF-8")
        }
        if let bad = text.unicodeScalars.first(where: SafeText.isUnsafe) {
            throw malformed(line, "has a \(key) with a control or formatting character (U+\(SafeText.hex(bad)))")
        }
        return text
    }

    private static func malformed(_ line: Int, _ what: String) -> CLIFailure {
        CLIFailure(.failure, "git's request is malformed: line \(line) \(what); nothing was changed",
                   hint: "git sends key=value lines (git-credential(1)); is something else writing to this helper?")
    }
}
