/// How a reader wants the finger: swiped across a strip, or pressed on a pad.
public enum ScanType: String, Sendable, Hashable {
    /// Swipe the finger across the sensor (FP_SCAN_TYPE_SWIPE).
    case swipe
    /// Place the finger on the sensor (FP_SCAN_TYPE_PRESS).
    case press
}

/// Which reader a print belongs to: libfprint's driver name and the device
/// id it reports. A print enrolled on one reader is useless on another.
public struct ReaderIdentity: Sendable, Hashable, Codable, CustomStringConvertible {
    /// libfprint driver name, such as `goodixmoc` or `virtual_device`.
    public let driver: String
    /// Device id as libfprint reports it (bus position or serial).
    public let deviceID: String

    public init(driver: String, deviceID: String) {
        self.driver = driver
        self.deviceID = deviceID
    }

    public var description: String { "\(driver)/\(deviceID)" }
}

/// What is known about a reader without touching it.
public struct ReaderInfo: Sendable, Hashable, Identifiable {
    /// Driver and device id.
    public let identity: ReaderIdentity
    /// Human-readable name from the driver.
    public let name: String
    /// Swipe or press.
    public let scanType: ScanType
    /// Touches an enrolment needs (may change after the reader is opened).
    public let enrollStages: Int
    /// Whether prints are kept and matched on the reader itself
    /// (match-on-chip); otherwise libfprint matches on the host.
    public let storesPrintsOnDevice: Bool
    /// Whether the reader can pick the matching print among several in one
    /// touch (identify); otherwise each print needs its own verify.
    public let canIdentify: Bool

    public init(identity: ReaderIdentity, name: String, scanType: ScanType,
                enrollStages: Int, storesPrintsOnDevice: Bool, canIdentify: Bool) {
        self.identity = identity
        self.name = name
        self.scanType = scanType
        self.enrollStages = enrollStages
        self.storesPrintsOnDevice = storesPrintsOnDevice
        self.canIdentify = canIdentify
    }

    public var id: ReaderIdentity { identity }
    /// libfprint driver name.
    public var driver: String { identity.driver }
    /// libfprint device id.
    public var deviceID: String { identity.deviceID }
}
