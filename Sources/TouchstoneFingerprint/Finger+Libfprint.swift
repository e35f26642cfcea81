extension Finger {
    /// libfprint's `FpFinger` number (FP_FINGER_LEFT_THUMB = 1 ...
    /// FP_FINGER_RIGHT_LITTLE = 10), in the order of `allCases`.
    var libfprintValue: UInt32 {
        UInt32(Finger.allCases.firstIndex(of: self)! + 1)
    }
}
