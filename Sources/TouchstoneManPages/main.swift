// TouchstoneManPages: writes the man pages that TouchstoneCommandLine
// renders from the command tables (touchstone.1, touchstoned.8,
// git-credential-touchstone.1) into a folder, for scripts/package-deb.
// Not a product: `.build/release/TouchstoneManPages DIR DATE`.
import Foundation
import TouchstoneCommandLine

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let folder = arguments.first, let date = arguments.last else {
    FileHandle.standardError.write(Data("usage: TouchstoneManPages DIR DATE (DATE for the pages' footer, e.g. 2026-01-31)\n".utf8))
    exit(64)
}
for page in ManPage.all(date: date) {
    let path = folder + "/" + page.fileName
    do {
        try Data(page.source.utf8).write(to: URL(fileURLWithPath: path))
    } catch {
        FileHandle.standardError.write(Data("TouchstoneManPages: error: cannot write \(path): \(error.localizedDescription)\n".utf8))
        exit(1)
    }
    print(path)
}
