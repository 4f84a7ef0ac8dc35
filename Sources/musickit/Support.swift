import Foundation
import MusicKitCore
import MusicKitTerminal

/// Plain-text columns for people: each column as wide as its widest cell (up to a limit).
func table(_ header: [String], _ rows: [[String]], maximumWidth: Int = 44) -> String {
    let rows = rows.map { $0.map { terminalSafe($0, keepingLines: false) } }
    let widths = header.indices.map { column in
        min(maximumWidth, ([header[column]] + rows.map { $0[column] }).map(\.count).max() ?? 0)
    }
    func line(_ cells: [String]) -> String {
        cells.enumerated().map { index, cell in
            let text = cell.count > widths[index] ? String(cell.prefix(widths[index] - 1)) + "…" : cell
            return index == cells.count - 1 ? text : padded(text, to: widths[index])
        }.joined(separator: "  ")
    }
    return ([line(header)] + rows.map(line)).joined(separator: "\n")
}

/// `text` followed by spaces up to `width` characters (no Foundation: this runs at start-up).
func padded(_ text: String, to width: Int) -> String {
    let count = text.count
    return count >= width ? text : text + String(repeating: " ", count: width - count)
}

/// JSON for scripts: sorted keys, readable. Control characters in strings are escaped (the
/// encoder escapes U+0000–U+001F; DEL and U+0080–U+009F are escaped here), so the text is
/// safe on a terminal and stays valid JSON.
func jsonText<T: Encodable>(_ value: T) throws -> String {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
    let text = String(decoding: try encoder.encode(value), as: UTF8.self)
    guard text.unicodeScalars.contains(where: { $0.value == 0x7F || (0x80...0x9F).contains($0.value) }) else { return text }
    var escaped = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        if scalar.value == 0x7F || (0x80...0x9F).contains(scalar.value) {
            escaped.append(contentsOf: String(format: "\\u%04x", scalar.value).unicodeScalars)
        } else {
            escaped.append(scalar)
        }
    }
    return String(escaped)
}

/// An error as a person reads it: a network failure with what could not be reached, an
/// Apple Music API error with what it means, anything else as it describes itself.
func errorMessage(_ error: any Error) -> String {
    if let error = error as? URLError {
        let url = error.failingURL.map { " (\($0.absoluteString))" } ?? ""
        return "network: \(error.localizedDescription)\(url)"
    }
    if let error = error as? MusicDataRequest.Error, let text = error.errorDescription { return text }
    if let error = error as? MusicPlayer.PlaybackError, case .subscriptionRequired(let title) = error {
        return "“\(title)” is Apple Music catalog content and needs a subscription; `musickit subscribe` shows "
            + "the offer (library songs and files play without one)"
    }
    return "\(error)"
}

/// Says so on stderr when an answer is the Apple Music API's cached copy because the API could
/// not be reached.
func noteIfStale(_ source: MusicCatalogAnswerSource?) {
    if case .cache(let fetched, isStale: true) = source {
        Console.error("note: the Apple Music API could not be reached; answered from its cached answer of "
                      + "\(ISO8601DateFormatter().string(from: fetched))\n")
    }
}

/// `--remote` / `--local`: which catalog answers a command (MUSICKIT_CATALOG for this process).
enum CatalogChoice {
    static let flags: [ArgumentSpec.Flag] = [
        .init(name: "--remote", help: "ask the Apple Music API (needs a developer token: see musickit catalog status)"),
        .init(name: "--local", help: "answer from the embedded catalog even when a developer token is configured"),
    ]

    static func apply(_ parsed: ParsedArguments) throws(UsageError) {
        switch (parsed.has("--remote"), parsed.has("--local")) {
        case (true, true): throw UsageError(message: "--remote and --local exclude each other")
        case (true, false): setenv("MUSICKIT_CATALOG", "remote", 1)
        case (false, true): setenv("MUSICKIT_CATALOG", "local", 1)
        case (false, false): break
        }
    }
}

/// Opens the embedded catalog, showing import progress on stderr when it has to be built, and
/// reporting documents that could not be imported. Nothing to do when the Apple Music API answers.
func prepareCatalog(quiet: Bool = false) throws {
    if try MusicCatalogIndex.source().usesAppleMusicAPI { return }
    let interactive = isatty(2) == 1 && !quiet
    let status = try MusicCatalogIndex.prepare { progress in
        guard interactive else { return }
        switch progress.phase {
        case .reading, .writing:
            Console.replaceLine("importing the catalog: \(progress.documentsRead)/\(progress.documentCount) documents, "
                                + "\(progress.resourcesWritten) items", toStandardError: true)
        case .indexing:
            Console.replaceLine("importing the catalog: indexing \(progress.resourcesWritten) items", toStandardError: true)
        case .done:
            Console.replaceLine("", toStandardError: true)
        }
    }
    if let reason = status.rebuildReason, reason != "first use", !quiet {
        Console.error("note: the catalog was rebuilt: \(reason)\n")
    }
    for error in status.documentErrors {
        Console.error("warning: catalog document not imported: \(error)\n")
    }
}

func duration(_ seconds: TimeInterval?) -> String { seconds.map(formatTime) ?? "" }

/// What `musickit --version` prints.
enum VersionLine {
    static var text: String { "musickit (OpenMusicKit) \(MusicKitEnvironment.version)" }
}
