import Foundation
import Glibc
import TouchstoneSecure
import TouchstoneTPM

// Looking for secrets in a process's memory: every readable mapping listed
// in /proc/PID/maps (heap, thread stacks, anonymous maps, file mappings,
// libraries) is read through /proc/PID/mem and searched for any run of at
// least `minimumMatch` bytes of each needle (so partial copies are found,
// not only whole ones). Used by Tests/CLITests/MemoryScanTests.swift on a
// stopped `touchstone` process and by Tests/VaultTests/SecretsInMemoryTests
// on the test process itself; docs/reliability.md "Secrets in memory".

/// A byte string to look for. Only a masked copy is kept (the bytes XOR a
/// random pad, in two arrays), so a test that scans its own memory does not
/// find its own needles: the plain bytes exist only one at a time, in
/// registers or a local, while the needle is built and compared.
package struct ScanNeedle: Sendable {
    package let label: String
    let masked: [UInt8]
    let pad: [UInt8]

    package var count: Int { masked.count }

    package init(_ label: String, _ bytes: UnsafeRawBufferPointer) {
        precondition(bytes.count >= 8, "a needle of fewer than 8 bytes would match by chance")
        self.label = label
        let pad = SecureBytes.random(count: bytes.count).withUnsafeBytes { Array($0) }
        self.pad = pad
        masked = (0..<bytes.count).map { bytes[$0] ^ pad[$0] }
    }

    package init(_ label: String, _ bytes: SecureBytes) {
        self = bytes.withUnsafeBytes { ScanNeedle(label, $0) }
    }

    @inline(__always) func byte(_ i: Int) -> UInt8 { masked[i] ^ pad[i] }

    /// Whether `bytes` are exactly the needle (compared a byte at a time).
    package func matches(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count == count && (0..<count).allSatisfy { bytes[$0] == byte($0) }
    }
}

/// The copies the scans know of and report as a known issue, not a
/// failure (docs/reliability.md, "Secrets in memory"): the passcode's
/// authValue. tpm2-tss keeps `session key ‖ authValue` in each session's
/// resource object (IESYS_SESSION.sessionValue) to key its HMACs and
/// parameter encryption, and frees that object without wiping it when the
/// session ends; nothing in ESYS's API reaches it first. Those copies
/// cannot be told apart from a copy of Touchstone's own, so no authValue
/// hit fails a test; the passcode itself is checked strictly.
package func isKnownTSSResidue(_ hit: MemoryScanReport.Hit) -> Bool {
    hit.label.hasSuffix("authValue")
}

/// What a scan found.
package struct MemoryScanReport: CustomStringConvertible, Sendable {
    /// One copy (whole or partial) of a needle.
    package struct Hit: CustomStringConvertible, Sendable {
        package let label: String
        package let address: UInt
        /// Which bytes of the needle are there (at least `minimumMatch`).
        package let needleBytes: Range<Int>
        /// The /proc/PID/maps line of the mapping it is in.
        package let mapping: String

        package var description: String {
            "\(label)[\(needleBytes.lowerBound)..<\(needleBytes.upperBound)] at 0x\(String(address, radix: 16)) in \(mapping)"
        }
    }

    package internal(set) var hits: [Hit] = []
    /// Readable mappings listed, and bytes read from them.
    package internal(set) var mappings = 0
    package internal(set) var bytesRead = 0
    /// Pages the kernel refused to read (EIO: [vvar], device memory, or a
    /// mapping that went away while the scan ran) and the mappings they are in.
    package internal(set) var unreadablePages = 0
    package internal(set) var unreadableMappings: [String] = []
    /// Bytes skipped on purpose (the scanner's own buffer, the caller's exclusions).
    package internal(set) var bytesExcluded = 0

    package var description: String {
        var text = "\(mappings) readable mappings, \(bytesRead / 1024) KiB read, \(unreadablePages) unreadable pages"
        if !unreadableMappings.isEmpty { text += " (\(unreadableMappings.joined(separator: "; ")))" }
        text += ", \(bytesExcluded) bytes excluded, \(hits.count) hits"
        for hit in hits { text += "\n  \(hit)" }
        return text
    }
}

package enum MemoryScanner {
    /// Scans `pid` (nil: this process) for `needles`. `excluding` lists
    /// address ranges not to search (buffers the caller holds on purpose).
    /// The target should be stopped (or be this process): memory that
    /// changes during the scan may be read half old, half new.
    package static func scan(pid: pid_t? = nil, needles: [ScanNeedle], minimumMatch: Int = 16,
                            excluding: [Range<UInt>] = []) throws -> MemoryScanReport {
        precondition(minimumMatch >= 16, "with 8-byte anchors at aligned addresses, runs of 16 bytes or more are always seen")
        let procPath = pid.map { "/proc/\($0)" } ?? "/proc/self"
        let table = AnchorTable(needles)
        let overlap = max(4096, ((needles.map(\.count).max() ?? 0) + 4095) & ~4095)
        let chunk = 1 << 20
        let bufferSize = chunk + overlap
        guard let raw = mmap(nil, bufferSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0),
              raw != MAP_FAILED else { throw RigFailure("mmap: \(String(cString: strerror(errno)))") }
        let buffer = raw.assumingMemoryBound(to: UInt8.self)
        defer {
            memset(raw, 0, bufferSize)  // it held copies of whatever was read
            munmap(raw, bufferSize)
        }
        let ownBuffer = UInt(bitPattern: raw)..<(UInt(bitPattern: raw) + UInt(bufferSize))
        let exclusions = (pid == nil ? [ownBuffer] : []) + excluding

        let mem = open(procPath + "/mem", O_RDONLY | O_CLOEXEC)
        guard mem >= 0 else { throw RigFailure("open \(procPath)/mem: \(String(cString: strerror(errno)))") }
        defer { close(mem) }

        var report = MemoryScanReport()
        let stacks = threadStackPointers(procPath)
        // A copy is known by its needle and where the needle's first byte
        // would be: a run cut by a chunk boundary is reported once.
        var seen = Set<String>()
        for mapping in try readMappings(procPath + "/maps") where mapping.readable {
            report.mappings += 1
            var unreadableHere = 0
            var start = mapping.range.lowerBound
            while start < mapping.range.upperBound {
                let scanEnd = min(start + UInt(chunk), mapping.range.upperBound)
                let readEnd = min(scanEnd + UInt(overlap), mapping.range.upperBound)
                let length = Int(readEnd - start)
                unreadableHere += readPages(mem, from: start, count: length, into: buffer, alreadyCounted: Int(scanEnd - start))
                for excluded in exclusions {
                    let low = max(excluded.lowerBound, start), high = min(excluded.upperBound, readEnd)
                    if low < high {
                        memset(buffer + Int(low - start), 0, Int(high - low))
                        if low < scanEnd { report.bytesExcluded += Int(min(high, scanEnd) - low) }
                    }
                }
                report.bytesRead += Int(scanEnd - start)
                table.search(buffer, scanCount: Int(scanEnd - start), readCount: length, minimumMatch: minimumMatch) { needle, offset, range in
                    let address = start + UInt(offset)
                    let key = "\(needle)@\(address &- UInt(range.lowerBound))"
                    guard seen.insert(key).inserted else { return }
                    let threads = stacks.filter { mapping.range.contains($0.pointer) }.map(\.thread)
                    report.hits.append(.init(label: needles[needle].label, address: address, needleBytes: range,
                                             mapping: mapping.line + (threads.isEmpty ? "" : " (stack of \(threads.joined(separator: ", ")))")))
                }
                memset(buffer, 0, length)
                start = scanEnd
            }
            if unreadableHere > 0 {
                report.unreadablePages += unreadableHere
                report.unreadableMappings.append(mapping.line)
            }
        }
        return report
    }

    /// Reads `count` bytes at `address`; pages that cannot be read are
    /// zero-filled. Returns how many of the pages in the first
    /// `alreadyCounted` bytes were unreadable (the overlap is counted with
    /// the next chunk).
    private static func readPages(_ mem: Int32, from address: UInt, count: Int, into buffer: UnsafeMutablePointer<UInt8>,
                                  alreadyCounted: Int) -> Int {
        if pread(mem, buffer, count, off_t(Int(bitPattern: address))) == count { return 0 }
        var unreadable = 0
        var offset = 0
        while offset < count {
            let n = min(4096, count - offset)
            if pread(mem, buffer + offset, n, off_t(Int(bitPattern: address + UInt(offset)))) != n {
                memset(buffer + offset, 0, n)
                if offset < alreadyCounted { unreadable += 1 }
            }
            offset += n
        }
        return unreadable
    }

    /// Each thread's stack pointer (from /proc/PID/task/TID/syscall, whose
    /// next-to-last field is the user stack pointer of a blocked thread),
    /// to tell which mapping is whose stack.
    static func threadStackPointers(_ procPath: String) -> [(thread: String, pointer: UInt)] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: procPath + "/task")) ?? []
        return tasks.compactMap { tid in
            guard let text = readProcFile("\(procPath)/task/\(tid)/syscall") else { return nil }
            let fields = text.split(separator: " ")
            guard fields.count >= 3, let sp = UInt(fields[fields.count - 2].dropFirst(2), radix: 16) else { return nil }
            let name = readProcFile("\(procPath)/task/\(tid)/comm")?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "?"
            return ("thread \(tid) \(name)", sp)
        }
    }

    struct Mapping {
        let range: Range<UInt>
        let readable: Bool
        let line: String
    }

    static func readMappings(_ path: String) throws -> [Mapping] {
        guard let text = readProcFile(path) else { throw RigFailure("cannot read \(path)") }
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 5 else { return nil }
            let bounds = fields[0].split(separator: "-")
            guard bounds.count == 2, let low = UInt(bounds[0], radix: 16), let high = UInt(bounds[1], radix: 16) else { return nil }
            return Mapping(range: low..<high, readable: fields[1].hasPrefix("r"), line: String(line))
        }
    }
}

/// Every 8-byte window of every needle (masked with one random word),
/// sorted, with a bitmap in front. Memory is probed only at 8-byte aligned
/// addresses: any run of 16 needle bytes, wherever it starts, covers one
/// aligned word, which equals one of the needle's 8-byte windows.
final class AnchorTable {
    private let needles: [ScanNeedle]
    private let mask: UInt64
    private var values: [UInt64] = []  // anchor ^ mask, sorted
    private var owners: [(needle: Int, offset: Int)] = []
    private var bitmap = [UInt64](repeating: 0, count: 1 << 14)  // 2^20 bits

    init(_ needles: [ScanNeedle]) {
        self.needles = needles
        mask = SecureBytes.random(count: 8).withUnsafeBytes { $0.loadUnaligned(as: UInt64.self) }
        var entries: [(UInt64, Int, Int)] = []
        for (n, needle) in needles.enumerated() where needle.count >= 8 {
            for offset in 0...(needle.count - 8) {
                var word: UInt64 = 0
                for i in 0..<8 { word |= UInt64(needle.byte(offset + i)) << (8 * UInt64(i)) }  // little-endian, as loaded
                entries.append((word ^ mask, n, offset))
                word = 0
            }
        }
        entries.sort { $0.0 < $1.0 }
        values = entries.map(\.0)
        owners = entries.map { ($0.1, $0.2) }
        for value in values { setBit(Self.hash(value)) }
    }

    @inline(__always) private static func hash(_ value: UInt64) -> Int { Int((value &* 0x9E37_79B9_7F4A_7C15) >> 44) }
    private func setBit(_ bit: Int) { bitmap[bit >> 6] |= 1 << UInt64(bit & 63) }

    /// Calls `found(needle, offset in buffer, needle byte range)` for each
    /// run of at least `minimumMatch` bytes that touches an aligned word in
    /// the first `scanCount` bytes (the rest, up to `readCount`, is context).
    func search(_ buffer: UnsafeMutablePointer<UInt8>, scanCount: Int, readCount: Int, minimumMatch: Int,
                found: (Int, Int, Range<Int>) -> Void) {
        let words = UnsafeRawPointer(buffer).assumingMemoryBound(to: UInt64.self)
        let wordCount = scanCount / 8
        let mask = self.mask
        bitmap.withUnsafeBufferPointer { bits in
            values.withUnsafeBufferPointer { values in
                var w = 0
                while w < wordCount {
                    let probe = words[w] ^ mask
                    let bit = Self.hash(probe)
                    if bits[bit >> 6] & (1 << UInt64(bit & 63)) != 0 {
                        var low = 0, high = values.count
                        while low < high {
                            let mid = (low + high) / 2
                            if values[mid] < probe { low = mid + 1 } else { high = mid }
                        }
                        var i = low
                        while i < values.count && values[i] == probe {
                            let (n, offset) = owners[i]
                            let range = extend(buffer, readCount: readCount, at: w * 8, needle: n, offset: offset)
                            if range.count >= minimumMatch {
                                found(n, w * 8 - (offset - range.lowerBound), range)
                            }
                            i += 1
                        }
                    }
                    w += 1
                }
            }
        }
    }

    /// The needle bytes around an 8-byte match at `position` (needle offset `offset`).
    private func extend(_ buffer: UnsafeMutablePointer<UInt8>, readCount: Int, at position: Int, needle n: Int,
                        offset: Int) -> Range<Int> {
        let needle = needles[n]
        var low = offset, p = position
        while low > 0 && p > 0 && buffer[p - 1] == needle.byte(low - 1) { low -= 1; p -= 1 }
        var high = offset + 8, q = position + 8
        while high < needle.count && q < readCount && buffer[q] == needle.byte(high) { high += 1; q += 1 }
        return low..<high
    }
}

/// Whether the page holding `address` is locked in memory (mlock): its
/// mapping in /proc/self/smaps carries the `lo` flag. mlock splits
/// mappings at page bounds, so the flag is exact per page.
package func isMemoryLocked(_ address: UnsafeRawPointer) throws -> Bool {
    try memoryFlags(address).contains("lo")
}

/// The VmFlags of the mapping holding `address` in /proc/self/smaps (`lo`:
/// locked, `dd`: left out of core dumps, ...).
package func memoryFlags(_ address: UnsafeRawPointer) throws -> [String] {
    guard let text = readProcFile("/proc/self/smaps") else {
        throw RigFailure("cannot read /proc/self/smaps")
    }
    let target = UInt(bitPattern: address)
    var inside = false
    for line in text.split(separator: "\n") {
        if let dash = line.firstIndex(of: "-"), let space = line.firstIndex(of: " "), dash < space,
           let low = UInt(line[..<dash], radix: 16), let high = UInt(line[line.index(after: dash)..<space], radix: 16) {
            inside = (low..<high).contains(target)
        } else if inside, line.hasPrefix("VmFlags:") {
            return line.split(separator: " ").dropFirst().map(String.init)
        }
    }
    throw RigFailure("no mapping holds 0x\(String(target, radix: 16))")
}

