/// User input inside usage errors: in quotes, unsafe characters escaped,
/// cut after a few dozen characters (TouchstoneModel's SafeText).
enum Quote {
    static func value(_ value: String) -> String { SafeText.quoted(value) }
}
