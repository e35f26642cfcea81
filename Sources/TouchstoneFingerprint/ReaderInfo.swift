/// How a reader wants the finger: swiped across a strip, or pressed on a pad.
package enum ScanType: String, Sendable, Hashable {
    /// Swipe the finger across the sensor (FP_SCAN_TYPE_SWIPE).
    case swipe
    /// Place the finger on the sensor (FP_SCAN_TYPE_PRESS).
    case press
}

/// Which reader a print belongs to: libfprint's driver name and the device
/// id it reports. A print enrolled on one reader is useless on another.
package struct ReaderIdentity: Sendable, Hashable, Codable, CustomStringConvertible {
    /// libfprint driver name, such as `goodixmoc` or `virtual_device`.
    package let driver: String
    /// Device id as libfprint reports it (bus position or serial).
    package let deviceID: String

    package init(driver: String, deviceID: String) {
        self.driver = driver
        self.deviceID = deviceID
    }

    package var description: String { "\(driver)/\(deviceID)" }
}

/// What is known about a reader without touching it.
package struct ReaderInfo: Sendable, Hashable, Identifiable {
    /// Driver and device id.
    package let identity: ReaderIdentity
    /// Human-readable name from the driver.
    package let name: String
    /// Swipe or press.
    package let scanType: ScanType
    /// Touches an enrolment needs (may change after the reader is opened).
    package let enrollStages: Int
    /// Whether prints are kept and matched on the reader itself
    /// (match-on-chip); otherwise libfprint matches on the host.
    package let storesPrintsOnDevice: Bool
    /// Whether the reader can pick the matching print among several in one
    /// touch (identify); otherwise each print needs its own verify.
    package let canIdentify: Bool

    package init(identity: ReaderIdentity, name: String, scanType: ScanType,
                enrollStages: Int, storesPrintsOnDevice: Bool, canIdentify: Bool) {
        self.identity = identity
        self.name = name
        self.scanType = scanType
        self.enrollStages = enrollStages
        self.storesPrintsOnDevice = storesPrintsOnDevice
        self.canIdentify = canIdentify
    }

    package var id: ReaderIdentity { identity }
    /// libfprint driver name.
    package var driver: String { identity.driver }
    /// libfprint device id.
    package var deviceID: String { identity.deviceID }
}
