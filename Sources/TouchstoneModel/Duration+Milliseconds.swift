extension Duration {
    /// Whole milliseconds (rounded down, clamped), as C APIs and the
    /// daemon's messages take a timeout.
    package var wholeMilliseconds: Int {
        let (seconds, attoseconds) = components
        return Int(clamping: seconds.multipliedReportingOverflow(by: 1000).overflow ? Int64.max
                   : seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
