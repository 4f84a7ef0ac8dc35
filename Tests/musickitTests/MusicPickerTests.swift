import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import MusicKitCore
import MusicKitTerminal
import XCTest

/// The music picker as a person uses it, through `musickit pick` in a real terminal (tmux):
/// typing searches, keys move and select, an album's page adds all its tracks, and what was
/// chosen comes out as IDs that `musickit play` takes.
final class MusicPickerTests: TerminalTestCase {
    private var environment: [String: String] {
        folders.merging(["TERM": "xterm-256color", "NO_COLOR": "", "COLORTERM": "truecolor"]) { $1 }
    }

    @discardableResult
    private func musickit(_ arguments: [String]) throws -> (code: Int32, out: String) {
        try runTool(CommandLineTests.executable.path, arguments,
                    environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
    }

    /// Runs `musickit pick ARGUMENTS` in the terminal, its output into a file; returns the file.
    private func startPick(_ arguments: [String]) throws -> (terminal: TmuxTerminal, output: URL) {
        let output = directory.appendingPathComponent("picked.txt")
        let exports = environment.map { "\($0.key)='\($0.value)'" }.joined(separator: " ")
        let command = "echo BEFORE; env \(exports) \(shellQuoted([CommandLineTests.executable.path, "pick"] + arguments)) "
            + "> \(output.path); echo AFTER-$?; sleep 60"
        let terminal = try TmuxTerminal(command)
        self.terminal = terminal
        return (terminal, output)
    }

    /// Moves the cursor down (j) until the marked row satisfies `condition` (at most 40 rows).
    private func moveDown(_ terminal: TmuxTerminal, until what: String, _ condition: (Substring) -> Bool) throws {
        for _ in 0..<40 {
            if let row = try terminal.screen().split(separator: "\n").first(where: { $0.contains("▸") }), condition(row) { return }
            try terminal.type("j")
            usleep(30_000)
        }
        XCTFail("the cursor never reached \(what):\n\(try terminal.screen())")
    }

    func testSearchingOpeningAnAlbumAndAddingAllTracksPrintsTheirIDs() throws {
        try musickit(["authorize", "musickit", "--allow"])
        try musickit(["account", "--subscription", "active"])
        let (terminal, output) = try startPick(["--multiple"])
        try terminal.waitForScreen("the picker") { $0.contains("Pick music") && $0.contains("Type to search the catalog") }
        XCTAssertEqual(try terminal.modes(), "1 0", "alternate screen, cursor hidden")

        try terminal.type("elys")
        var shown = try terminal.waitForScreen("the catalog's answers as typed") { $0.contains("Albums") && $0.contains("Elysia —") }
        XCTAssertTrue(shown.contains("Search: elys"), shown)
        try terminal.type("Down")
        try moveDown(terminal, until: "the album Elysia") { $0.contains("Elysia —") && $0.contains("tracks") }
        try terminal.type("Enter")
        shown = try terminal.waitForScreen("the album's page") { $0.contains("Elysia  (4 tracks)") }
        XCTAssertTrue(shown.contains("Ezer Év"), "its tracks: \(shown)")
        try terminal.type("a")
        try terminal.waitForScreen("all tracks added") { $0.contains("added all 4 tracks of “Elysia”") }
        try terminal.type("Enter")
        shown = try terminal.waitForScreen("the shell again") { $0.contains("AFTER-") }
        XCTAssertTrue(shown.contains("BEFORE") && shown.contains("AFTER-0"), shown)
        XCTAssertEqual(try terminal.modes(), "0 1", "main screen, cursor shown")

        let ids = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(ids.count, 4, "the album's four tracks")
        let songs = try musickit(["catalog", "songs"] + ids)
        XCTAssertEqual(songs.code, 0, "catalog song IDs: \(songs.out)")
        XCTAssertTrue(songs.out.contains("Ezer Év"), songs.out)
    }

    func testWithoutASubscriptionItPicksFromTheLibraryAndEscCancels() throws {
        let folder = directory.appendingPathComponent("music")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for (index, name) in ["Garden Tone", "River Tone"].enumerated() {
            try writeTone(to: folder.appendingPathComponent("\(name).flac"), hz: 440, seconds: 1, title: name,
                          artist: "Picker Tests", trackNumber: index + 1)
        }
        try musickit(["authorize", "musickit", "--allow"])
        try musickit(["account", "--subscription", "none"])
        XCTAssertEqual(try musickit(["library", "scan", folder.path]).code, 0)

        var (terminal, output) = try startPick(["river"])
        var shown = try terminal.waitForScreen("the library's answer") { $0.contains("River Tone") }
        XCTAssertTrue(shown.contains("Catalog (subscription)"), "the catalog tab is off without a subscription: \(shown)")
        try terminal.type("Tab")
        try terminal.waitForScreen("why the catalog is off") { $0.contains("needs an Apple Music subscription") }
        try terminal.type("Down")
        try terminal.type("Enter")
        shown = try terminal.waitForScreen("the shell again") { $0.contains("AFTER-") }
        XCTAssertTrue(shown.contains("AFTER-0"), shown)
        let picked = try String(contentsOf: output, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        XCTAssertTrue(picked.hasPrefix("i."), "a library song's ID: \(picked)")
        let listed = try musickit(["library", "list", "songs", "--json"])
        XCTAssertTrue(listed.out.contains(picked) && listed.out.contains("River Tone"), listed.out)

        terminal.stop()
        (terminal, output) = try startPick([])
        try terminal.waitForScreen("the picker") { $0.contains("Pick music") }
        try terminal.type("Escape")
        shown = try terminal.waitForScreen("the shell again") { $0.contains("AFTER-") }
        XCTAssertTrue(shown.contains("AFTER-1"), "cancelled: exit 1 \(shown)")
        XCTAssertEqual(try String(contentsOf: output, encoding: .utf8), "", "nothing printed")
    }
}
