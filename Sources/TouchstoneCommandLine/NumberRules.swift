/// The parsing of numbers from the command line and the environment: plain
/// ASCII digits only (no sign, no exponent, no `inf`, no other scripts'
/// digits), checked against a range before any arithmetic can overflow.
enum NumberRules {
    /// Seconds: digits with up to three decimals (`30`, `0.5`), more than 0
    /// and at most `maximum`. Millisecond precision.
    static func seconds(_ value: String, _ what: String,
                        maximum: Duration = GlobalOptions.maximumTimeout) throws(UsageError) -> Duration {
        let maximumSeconds = Int(maximum.components.seconds)
        let failure = UsageError("\(what) must be a number of seconds, more than 0 and at most \(maximumSeconds), not \(Quote.value(value))")
        let parts = value.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        guard let whole = parts.first, let wholeNumber = digits(whole, atMost: 9) else { throw failure }
        var milliseconds = wholeNumber * 1000
        if parts.count == 2 {
            let fraction = parts[1]
            guard fraction.utf8.count <= 3, let fractionNumber = digits(fraction, atMost: 3) else { throw failure }
            let scale = [100, 10, 1][fraction.utf8.count - 1]
            milliseconds += fractionNumber * scale
        }
        guard milliseconds > 0, milliseconds <= maximumSeconds * 1000 else { throw failure }
        return .milliseconds(milliseconds)
    }

    /// A whole number in `range`.
    static func whole(_ value: String, _ what: String, in range: ClosedRange<Int>) throws(UsageError) -> Int {
        guard let number = digits(value[...], atMost: 10), range.contains(number) else {
            throw UsageError("\(what) must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(Quote.value(value))")
        }
        return number
    }

    /// The value of 1 to `atMost` ASCII digits, or nil.
    private static func digits(_ text: Substring, atMost limit: Int) -> Int? {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= limit else { return nil }
        var number = 0
        for byte in bytes {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            number = number * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return number
    }
}
