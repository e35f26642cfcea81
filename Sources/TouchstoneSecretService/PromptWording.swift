/// The words a prompt names its items with: the same in the reason the
/// engine is given (the daemon logs it), the notification, pinentry and
/// the provider's log.
package enum PromptWording {
    /// How many labels a prompt quotes before it counts the rest.
    package static let labelsNamed = 3
    /// The longest label quoted whole (a longer one is cut, with an ellipsis).
    package static let longestLabel = 64

    /// Items as a prompt names them: the first three labels quoted, then
    /// the count of the rest (\u{201C}A\u{201D}, \u{201C}B\u{201D},
    /// \u{201C}C\u{201D} and 2 more). A label's control characters become
    /// spaces and a long one is cut, so that no label writes lines of the
    /// prompt's own or hides the ones after it.
    package static func items(_ labels: [String]) -> String {
        let quoted = labels.prefix(labelsNamed).map { label -> String in
            let flat = String(String.UnicodeScalarView(label.unicodeScalars.map {
                $0.properties.generalCategory == .control || $0.properties.generalCategory == .format
                    || $0 == "\u{2028}" || $0 == "\u{2029}" ? " " : $0
            }))
            let shown = flat.count > longestLabel ? flat.prefix(longestLabel - 1) + "\u{2026}" : flat
            return "\u{201C}\(shown)\u{201D}"
        }
        let rest = labels.count - quoted.count
        switch (quoted.count, rest) {
        case (0, _): return "no item"
        case (1, 0): return quoted[0]
        case (_, 0): return quoted.dropLast().joined(separator: ", ") + " and " + quoted[quoted.count - 1]
        default: return quoted.joined(separator: ", ") + " and \(rest) more"
        }
    }
}
