import Testing
@testable import TouchstoneFIDO

/// The uhid events `fido serve --uhid` writes and reads, checked byte by
/// byte against the kernel's ABI (linux/uhid.h: struct uhid_event is
/// packed, its type a __u32 at 0, the request from byte 4). This
/// machine's kernel has no uhid, so the device itself is not made here
/// (docs/fido.md says which parts ran where).
@Suite("uhid: the virtual FIDO device's events")
struct UHIDEventTests {
    static func u16(_ bytes: [UInt8], _ at: Int) -> Int { Int(bytes[at]) | Int(bytes[at + 1]) << 8 }
    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(bytes[at + $1]) << (8 * $1) } }

    @Test("every event is the kernel's struct uhid_event: 4380 bytes (4 for the type, the union of requests rounded to its 8-byte alignment), as gcc measures it with linux/uhid.h")
    func size() {
        #expect(UHIDEvent.size == 4380)
        #expect(UHIDEvent.create(name: "x", vendor: 1, product: 2).count == 4380)
        #expect(UHIDEvent.input([1, 2, 3]).count == 4380)
        #expect(UHIDEvent.destroy().count == 4380)
    }

    @Test("UHID_CREATE2 (11): the name at 4, rd_size at 260, bus USB (3) at 262, vendor, product, version, country, then FIDO's report descriptor at 280")
    func create() {
        let event = UHIDEvent.create(name: "Touchstone FIDO authenticator", vendor: 0x1209, product: 0x7457)
        #expect(Self.u32(event, 0) == 11)
        #expect(Array(event[4..<33]) == Array("Touchstone FIDO authenticator".utf8) && event[33] == 0)
        #expect(Self.u16(event, 260) == 34 && UHIDEvent.fidoReportDescriptor.count == 34)
        #expect(Self.u16(event, 262) == 3)
        #expect(Self.u32(event, 264) == 0x1209 && Self.u32(event, 268) == 0x7457 && Self.u32(event, 272) == 1 && Self.u32(event, 276) == 0)
        #expect(Array(event[280..<314]) == UHIDEvent.fidoReportDescriptor)
        #expect(event[314...].allSatisfy { $0 == 0 })
        // The descriptor: usage page 0xF1D0, usage 1, 64-byte input and output reports.
        let descriptor = UHIDEvent.fidoReportDescriptor
        #expect(Array(descriptor[0..<5]) == [0x06, 0xD0, 0xF1, 0x09, 0x01])
        #expect(descriptor.indices.filter { descriptor[$0] == 0x95 }.map { descriptor[$0 + 1] } == [64, 64])
        #expect(descriptor.contains(0x81) && descriptor.contains(0x91) && descriptor.last == 0xC0)
        // A name longer than the field is cut, and still ends in a zero.
        let long = UHIDEvent.create(name: String(repeating: "n", count: 300), vendor: 0, product: 0)
        #expect(long[131] == 0 && long[130] == UInt8(ascii: "n"))
    }

    @Test("UHID_INPUT2 (12): size at 4, the report from 6; UHID_DESTROY (1)")
    func input() {
        let report = (0..<64).map { UInt8($0) }
        let event = UHIDEvent.input(report)
        #expect(Self.u32(event, 0) == 12 && Self.u16(event, 4) == 64 && Array(event[6..<70]) == report)
        #expect(Self.u32(UHIDEvent.destroy(), 0) == 1)
    }

    /// An event as the kernel writes it.
    static func kernelEvent(type: UInt32, _ fill: (inout [UInt8]) -> Void = { _ in }) -> [UInt8] {
        var event = [UInt8](repeating: 0, count: 4380)
        for i in 0..<4 { event[i] = UInt8(type >> (8 * UInt32(i)) & 0xFF) }
        fill(&event)
        return event
    }

    @Test("UHID_OUTPUT (6) read: the data from 4, size at 4100; 65 bytes led by report number 0 lose it, 64 are kept whole")
    func output() {
        let report = (0..<64).map { UInt8(200 - $0) }
        let numbered = Self.kernelEvent(type: 6) { event in
            event[4] = 0
            event.replaceSubrange(5..<69, with: report)
            event[4100] = 65
        }
        #expect(UHIDEvent.decode(numbered) == .output(report))
        let bare = Self.kernelEvent(type: 6) { event in
            event.replaceSubrange(4..<68, with: report)
            event[4100] = 64
        }
        #expect(UHIDEvent.decode(bare) == .output(report))
        // A size beyond the data is bounded by it, not read past.
        let oversize = Self.kernelEvent(type: 6) { event in
            event[4100] = 0xFF
            event[4101] = 0xFF
        }
        if case .output(let data) = UHIDEvent.decode(oversize) { #expect(data.count == 4096) } else { Issue.record("not an output") }
    }

    @Test("START, STOP, OPEN, CLOSE and other types are told apart; GET_REPORT and SET_REPORT are answered with their id and EIO; a short read is nothing")
    func otherEvents() {
        #expect(UHIDEvent.decode(Self.kernelEvent(type: 2)) == .start)
        #expect(UHIDEvent.decode(Self.kernelEvent(type: 3)) == .stop)
        #expect(UHIDEvent.decode(Self.kernelEvent(type: 4)) == .open)
        #expect(UHIDEvent.decode(Self.kernelEvent(type: 5)) == .close)
        #expect(UHIDEvent.decode(Self.kernelEvent(type: 99)) == .other(99))
        #expect(UHIDEvent.decode([6, 0]) == nil)
        let get = Self.kernelEvent(type: 9) { $0[4] = 7 }
        #expect(UHIDEvent.decode(get) == .getReport(id: 7))
        let reply = UHIDEvent.refuse(.getReport(id: 7))!
        #expect(Self.u32(reply, 0) == 10 && Self.u32(reply, 4) == 7 && Self.u16(reply, 8) == 5)
        let set = Self.kernelEvent(type: 13) { $0[4] = 9 }
        #expect(UHIDEvent.decode(set) == .setReport(id: 9))
        let setReply = UHIDEvent.refuse(.setReport(id: 9))!
        #expect(Self.u32(setReply, 0) == 14 && Self.u32(setReply, 4) == 9 && Self.u16(setReply, 8) == 5)
        #expect(UHIDEvent.refuse(.start) == nil)
    }
}
