import Testing
import Touchstone
import TouchstoneServer

/// The bytes between the daemon and its print checker: what one side
/// writes the other reads back, and a reply that is anything else (the
/// checker just parsed a stranger's bytes) is refused, never half read.
@Suite("The print checker's framing")
struct PrintCheckWireTests {
    static let readings: [PrintReading] = [
        .read(driver: "virtual_device", deviceID: "0", finger: .rightThumb, data: Array("FP3 print".utf8)),
        .refused("libfprint cannot read it (Data could not be parsed)"),
        .read(driver: "goodixmoc", deviceID: "1-4", finger: nil, data: []),
        .read(driver: "elan", deviceID: "x", finger: .leftLittle, data: [UInt8](repeating: 7, count: 70_000)),
    ]

    @Test("a request and a reply read back as written: prints in order, each reading's fields")
    func roundTrip() throws {
        let prints: [[UInt8]] = [Array("one".utf8), [], [UInt8](repeating: 0xff, count: 100_000)]
        #expect(try PrintCheckWire.prints(inRequest: PrintCheckWire.request(prints)) == prints)
        #expect(try PrintCheckWire.prints(inRequest: PrintCheckWire.request([])) == [])
        #expect(try PrintCheckWire.readings(inReply: PrintCheckWire.reply(Self.readings), expected: 4) == Self.readings)
        for finger in Finger.allCases {
            let reading = PrintReading.read(driver: "d", deviceID: "i", finger: finger, data: [1])
            #expect(try PrintCheckWire.readings(inReply: PrintCheckWire.reply([reading]), expected: 1) == [reading])
        }
    }

    @Test("a reply that is not one is refused: cut short, bytes after it, another count, tag, finger, version or header, a field beyond its limit, text that is not UTF-8")
    func malformedReplies() throws {
        let reply = PrintCheckWire.reply(Self.readings)
        #expect(try PrintCheckWire.readings(inReply: reply, expected: 4).count == 4)
        func refused(_ bytes: [UInt8], expected: Int = 4, _ says: String) {
            do {
                _ = try PrintCheckWire.readings(inReply: bytes, expected: expected)
                Issue.record("read: \(says)")
            } catch {
                #expect(says.isEmpty || error.description.contains(says), "\(error)")
            }
        }
        for cut in [0, 3, 5, 6, 10, reply.count / 2, reply.count - 1] { refused(Array(reply.prefix(cut)), "") }
        refused(reply + [0], "after the end")
        refused(reply, expected: 3, "4 readings for 3 prints")
        refused(Array("TSPQ".utf8) + reply.dropFirst(4), "header")
        refused(Array(reply.prefix(4)) + [2] + reply.dropFirst(5), "another version")
        refused(Array(reply.prefix(5)) + [11] + reply.dropFirst(6), "11 prints")
        var tag = PrintCheckWire.reply([.refused("x")])
        tag[6] = 2
        refused(tag, expected: 1, "reading tag 2")
        // read | driver "d" | device "i" | finger 11 | data
        let finger = Array("TSPA".utf8) + [1, 1, 0, 0, 0, 0, 1, 0x64, 0, 0, 0, 1, 0x69, 11, 0, 0, 0, 0]
        refused(finger, expected: 1, "finger 11")
        let huge = Array("TSPA".utf8) + [1, 1, 1, 0x7f, 0xff, 0xff, 0xff]
        refused(huge, expected: 1, "at most 4096")
        let notUTF8 = Array("TSPA".utf8) + [1, 1, 1, 0, 0, 0, 2, 0xc3, 0x28]
        refused(notUTF8, expected: 1, "not UTF-8")
    }

    @Test("a request that is not one is refused by the checker: another header, a print beyond its limit, bytes after it")
    func malformedRequests() throws {
        let request = PrintCheckWire.request([Array("print".utf8)])
        #expect(try PrintCheckWire.prints(inRequest: request) == [Array("print".utf8)])
        #expect(throws: PrintCheckWire.Malformed.self) { try PrintCheckWire.prints(inRequest: PrintCheckWire.reply([])) }
        #expect(throws: PrintCheckWire.Malformed.self) { try PrintCheckWire.prints(inRequest: request + [0]) }
        #expect(throws: PrintCheckWire.Malformed.self) {
            try PrintCheckWire.prints(inRequest: Array("TSPQ".utf8) + [1, 1, 0x00, 0x20, 0x00, 0x01])
        }
    }
}
