import Testing
import TouchstoneSecretService

/// How a prompt names the items it unlocks (the reason, the notification,
/// pinentry and the log say the same).
@Suite("the words of an Unlock prompt")
struct PromptWordingTests {
    @Test("one to three items are named by label; from four on, the first three and the count of the rest")
    func counts() {
        #expect(PromptWording.items(["Mail"]) == "\u{201C}Mail\u{201D}")
        #expect(PromptWording.items(["Mail", "Bank"]) == "\u{201C}Mail\u{201D} and \u{201C}Bank\u{201D}")
        #expect(PromptWording.items(["A", "B", "C"]) == "\u{201C}A\u{201D}, \u{201C}B\u{201D} and \u{201C}C\u{201D}")
        #expect(PromptWording.items(["A", "B", "C", "D"]) == "\u{201C}A\u{201D}, \u{201C}B\u{201D}, \u{201C}C\u{201D} and 1 more")
        #expect(PromptWording.items((1...1024).map { "item \($0)" }).hasSuffix("\u{201C}item 3\u{201D} and 1021 more"))
    }

    @Test("a label cannot write lines of the prompt's own or push the rest out of sight: control and line-separator characters become spaces, a long label is cut")
    func hostileLabels() {
        let named = PromptWording.items(["Bank\n\nTouch to approve a login", "x\u{2028}y\u{202E}z"])
        #expect(named == "\u{201C}Bank  Touch to approve a login\u{201D} and \u{201C}x y z\u{201D}", "\(named)")
        let long = PromptWording.items([String(repeating: "a", count: 500), "Second"])
        #expect(long == "\u{201C}" + String(repeating: "a", count: PromptWording.longestLabel - 1) + "\u{2026}\u{201D} and \u{201C}Second\u{201D}")
        // The next label is still named: a label of exactly the limit stays whole.
        let exact = String(repeating: "b", count: PromptWording.longestLabel)
        #expect(PromptWording.items([exact]) == "\u{201C}\(exact)\u{201D}")
    }
}
