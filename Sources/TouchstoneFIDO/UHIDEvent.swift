internal import CUHID

/// The kernel's uhid events (linux/uhid.h), as `fido serve --uhid` writes
/// and reads them on /dev/uhid: UHID_CREATE2 makes a USB HID device with
/// FIDO's report descriptor, UHID_INPUT2 carries a report to the host,
/// UHID_OUTPUT brings one from it. Encoded into and read from the
/// kernel's own `struct uhid_event` (its size, every write and read).
package enum UHIDEvent: Equatable, Sendable {
    /// The device's driver started, or stopped.
    case start, stop
    /// A program opened the hidraw node, or closed it.
    case open, close
    /// A 64-byte report the host wrote (without report number).
    case output([UInt8])
    /// A GET_REPORT or SET_REPORT request (answered with an error: FIDO
    /// has no feature reports), its id.
    case getReport(id: UInt32)
    case setReport(id: UInt32)
    /// Any other event, by type.
    case other(UInt32)

    /// The size of every event written to or read from /dev/uhid.
    package static let size = MemoryLayout<uhid_event>.size

    /// FIDO's HID report descriptor (CTAP 2.1, 11.2.8.1): usage page
    /// 0xF1D0, usage CTAPHID (0x01), one 64-byte input and one 64-byte
    /// output report, no report ids.
    package static let fidoReportDescriptor: [UInt8] = [
        0x06, 0xD0, 0xF1,  // Usage Page (FIDO Alliance)
        0x09, 0x01,        // Usage (CTAPHID)
        0xA1, 0x01,        // Collection (Application)
        0x09, 0x20,        //   Usage (Input Report Data)
        0x15, 0x00,        //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,        //   Report Size (8)
        0x95, 0x40,        //   Report Count (64)
        0x81, 0x02,        //   Input (Data, Variable, Absolute)
        0x09, 0x21,        //   Usage (Output Report Data)
        0x15, 0x00,        //   Logical Minimum (0)
        0x26, 0xFF, 0x00,  //   Logical Maximum (255)
        0x75, 0x08,        //   Report Size (8)
        0x95, 0x40,        //   Report Count (64)
        0x91, 0x02,        //   Output (Data, Variable, Absolute)
        0xC0,              // End Collection
    ]

    /// UHID_CREATE2 for a USB device named `name` with FIDO's descriptor.
    package static func create(name: String, vendor: UInt32, product: UInt32) -> [UInt8] {
        var event = uhid_event()
        event.type = UInt32(UHID_CREATE2.rawValue)
        withUnsafeMutableBytes(of: &event.u.create2.name) { field in
            let bytes = Array(name.utf8.prefix(field.count - 1))
            field.copyBytes(from: bytes)
        }
        event.u.create2.rd_size = UInt16(fidoReportDescriptor.count)
        event.u.create2.bus = UInt16(BUS_USB)
        event.u.create2.vendor = vendor
        event.u.create2.product = product
        event.u.create2.version = 1
        event.u.create2.country = 0
        withUnsafeMutableBytes(of: &event.u.create2.rd_data) { $0.copyBytes(from: fidoReportDescriptor) }
        return bytes(of: event)
    }

    /// UHID_INPUT2 carrying `report` to the host.
    package static func input(_ report: [UInt8]) -> [UInt8] {
        var event = uhid_event()
        event.type = UInt32(UHID_INPUT2.rawValue)
        let data = report.prefix(Int(UHID_DATA_MAX))
        event.u.input2.size = UInt16(data.count)
        withUnsafeMutableBytes(of: &event.u.input2.data) { $0.copyBytes(from: data) }
        return bytes(of: event)
    }

    /// UHID_DESTROY.
    package static func destroy() -> [UInt8] {
        var event = uhid_event()
        event.type = UInt32(UHID_DESTROY.rawValue)
        return bytes(of: event)
    }

    /// The answer to a GET_REPORT or SET_REPORT: an error (EIO).
    package static func refuse(_ request: UHIDEvent) -> [UInt8]? {
        var event = uhid_event()
        switch request {
        case .getReport(let id):
            event.type = UInt32(UHID_GET_REPORT_REPLY.rawValue)
            event.u.get_report_reply.id = id
            event.u.get_report_reply.err = 5
        case .setReport(let id):
            event.type = UInt32(UHID_SET_REPORT_REPLY.rawValue)
            event.u.set_report_reply.id = id
            event.u.set_report_reply.err = 5
        default:
            return nil
        }
        return bytes(of: event)
    }

    /// An event the kernel wrote (nil: too short to be one). An output
    /// report of 65 bytes starting with report number 0 (what hidraw
    /// passes for a device without numbered reports) loses that byte.
    package static func decode(_ raw: [UInt8]) -> UHIDEvent? {
        guard raw.count >= 4 else { return nil }
        var event = uhid_event()
        withUnsafeMutableBytes(of: &event) { $0.copyBytes(from: raw.prefix($0.count)) }
        switch event.type {
        case UInt32(UHID_START.rawValue): return .start
        case UInt32(UHID_STOP.rawValue): return .stop
        case UInt32(UHID_OPEN.rawValue): return .open
        case UInt32(UHID_CLOSE.rawValue): return .close
        case UInt32(UHID_OUTPUT.rawValue):
            let size = min(Int(event.u.output.size), Int(UHID_DATA_MAX))
            var data = withUnsafeBytes(of: &event.u.output.data) { Array($0.prefix(size)) }
            if data.count == CTAPHID.reportSize + 1, data.first == 0 { data.removeFirst() }
            return .output(data)
        case UInt32(UHID_GET_REPORT.rawValue): return .getReport(id: event.u.get_report.id)
        case UInt32(UHID_SET_REPORT.rawValue): return .setReport(id: event.u.set_report.id)
        default: return .other(event.type)
        }
    }

    private static func bytes(of event: uhid_event) -> [UInt8] {
        withUnsafeBytes(of: event) { Array($0) }
    }
}
