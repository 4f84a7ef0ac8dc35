import AudioEngine
import AudioMeasurement
import AudioTestSupport
import Foundation
import Glibc
import XCTest

/// ncmpcpp, MPD's best-known terminal client, against musickitd's MPD socket in a real
/// terminal (tmux): its Browse, Media library, Search and Playlist screens show the library
/// (issue #44: Browse was empty and said "Malformed entity response line", the media library
/// showed no songs, Search said "No results found"), and a change made with mpc appears in it.
final class NcmpcppTests: TerminalTestCase {
    func testBrowseMediaLibrarySearchAndPlaylistShowTheLibraryAndFollowMpc() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/ncmpcpp") else {
            throw XCTSkip("ncmpcpp is not installed (scripts/setup-system installs it)")
        }
        let device = try AudioTestEnvironment.requirePulse()
        var environment = folders
        environment["MUSICKIT_AUTHORIZATION"] = "authorized"
        environment["MUSICKIT_AUDIO_DEVICE"] = device
        let music = directory.appendingPathComponent("Music")
        for (path, title, track) in [("The Breeze/Weather/1 - Zephyr.flac", "Zephyr", 1), ("The Breeze/Weather/2 - Arctic.flac", "Arctic", 2)] {
            let url = music.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try writeTone(to: url, hz: 440, seconds: 2, title: title, artist: "The Breeze", album: "Weather", trackNumber: track)
        }
        func musickit(_ arguments: [String]) throws -> (code: Int32, out: String) {
            try runTool(CommandLineTests.executable.path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        }
        XCTAssertEqual(try musickit(["library", "scan", music.path]).code, 0)
        XCTAssertEqual(try musickit(["daemon", "start"]).code, 0)
        addTeardownBlock { _ = try? musickit(["daemon", "stop"]) }
        let socket = directory.appendingPathComponent("runtime/mpd.sock").path

        // HOME: ncmpcpp keeps its files there, not in the person's.
        terminal = try TmuxTerminal("HOME=\(shellQuoted([directory.path])) ncmpcpp -h \(shellQuoted([socket])); sleep 60")
        let ncmpcpp = try XCTUnwrap(terminal)
        try ncmpcpp.type("2")
        var shown = try ncmpcpp.waitForScreen("Browse with the library's folder") { $0.contains("Browse") && $0.contains("[The Breeze]") }
        XCTAssertFalse(shown.contains("Malformed"), shown)
        try ncmpcpp.type("Enter")
        try ncmpcpp.waitForScreen("the artist's folder") { $0.contains("[Weather]") }
        try ncmpcpp.type("Down", "Enter")  // past "[..]"
        shown = try ncmpcpp.waitForScreen("the album's songs") { $0.contains("Zephyr") && $0.contains("Arctic") }
        let lines = shown.split(separator: "\n")
        XCTAssertLessThan(try XCTUnwrap(lines.firstIndex { $0.contains("Zephyr") }), try XCTUnwrap(lines.firstIndex { $0.contains("Arctic") }),
                          "in track order")

        try ncmpcpp.type("4")
        try ncmpcpp.waitForScreen("the media library's artists") { $0.contains("Media library") && $0.contains("The Breeze") }
        // Down the artists (the bundled catalog's among them) to "The Breeze".
        for _ in 0..<10 {
            let screen = try ncmpcpp.screen()
            if screen.contains("Weather") && screen.contains("Zephyr") { break }
            try ncmpcpp.type("Down")
            usleep(100_000)
        }
        shown = try ncmpcpp.waitForScreen("the artist's album and songs") { $0.contains("Weather") && $0.contains("Zephyr") }

        // Search: any tag containing "zeph" finds the one song (it said "No results found").
        try ncmpcpp.type("3")
        try ncmpcpp.waitForScreen("the search engine") { $0.contains("Search in:") }
        try ncmpcpp.type("Enter")  // the "Any:" field
        try ncmpcpp.type("z", "e", "p", "h", "Enter")
        try ncmpcpp.waitForScreen("the term in its field") { $0.contains("zeph") }
        try ncmpcpp.type("End", "Up", "Enter")  // "Search", above "Reset"
        shown = try ncmpcpp.waitForScreen("the search's result") { $0.contains("Zephyr") && $0.contains("Search results") }
        XCTAssertFalse(shown.contains("No results"), shown)
        XCTAssertFalse(shown.contains("Arctic"), "only what matches: \(shown)")

        // A change from mpc appears in the playlist screen.
        try ncmpcpp.type("1")
        try ncmpcpp.waitForScreen("the empty playlist") { $0.contains("Playlist") }
        let added = try runTool("/usr/bin/mpc", ["add", music.appendingPathComponent("The Breeze/Weather/2 - Arctic.flac").path],
                                environment: ["MPD_HOST": socket])
        XCTAssertEqual(added.code, 0, added.out)
        try ncmpcpp.waitForScreen("mpc's add in the playlist") { $0.contains("Playlist") && $0.contains("Arctic") }

        // The volume (issue #45): mpc's change shows in ncmpcpp's header, and its `+` key turns
        // it up by its step (2 points) for every client.
        XCTAssertEqual(try runTool("/usr/bin/mpc", ["volume", "50"], environment: ["MPD_HOST": socket]).code, 0)
        try ncmpcpp.waitForScreen("the volume mpc set") { $0.contains("Volume: 50%") }
        try ncmpcpp.type("+")
        try ncmpcpp.waitForScreen("the volume ncmpcpp set") { $0.contains("Volume: 52%") }
        XCTAssertEqual(try runTool("/usr/bin/mpc", ["volume"], environment: ["MPD_HOST": socket]).out, "volume: 52%\n")
    }
}
