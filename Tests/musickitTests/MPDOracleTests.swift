import AudioMeasurement
import AudioTestSupport
import Foundation
import Glibc
@testable import MusicKitCore
import XCTest

/// musickitd's MPD protocol against the real thing (issue #44): a private MPD 0.23 and musickitd
/// are given the same folder of songs and asked the same library questions, and must answer
/// alike — the same songs in the same order with the same tags, the same folders, the same
/// counts. musickitd's answers may say more (its database also holds the bundled catalog, so
/// `list` may name more artists); they may not say less or otherwise.
final class MPDOracleTests: TerminalTestCase {
    /// One song as both describe it: its file (relative to the music folder: MPD's URIs are,
    /// musickitd's are absolute paths) and the tags both carry.
    private static let comparedKeys: Set<String> = ["Title", "Artist", "AlbumArtist", "Album", "Track", "Disc", "Date", "Genre", "Time"]

    func testMusickitdAnswersLibraryQueriesAsMPDDoesForTheSameFiles() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/mpd") else {
            throw XCTSkip("mpd is not installed (scripts/setup-system installs it)")
        }
        let music = directory.appendingPathComponent("Music")
        let songs: [(path: String, title: String, artist: String, album: String, track: Int)] = [
            ("The Breeze/Weather/1 - Zephyr.flac", "Zephyr", "The Breeze", "Weather", 1),
            ("The Breeze/Weather/2 - Arctic.flac", "Arctic", "The Breeze", "Weather", 2),
            ("The Breeze/Seasons/1 - Thaw.flac", "Thaw", "The Breeze", "Seasons", 1),
            ("Solo/alone: live.flac", "Alone", "Solo Artist", "Single", 1),
        ]
        for (index, song) in songs.enumerated() {
            let url = music.appendingPathComponent(song.path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try writeTone(to: url, hz: 300 + 100 * Double(index), seconds: 1, title: song.title, artist: song.artist,
                          album: song.album, trackNumber: song.track)
        }
        // A two-disc compilation, tagged as taggers do (ALBUMARTIST, DISCNUMBER: libsndfile
        // writes neither), its second disc's song first in the folder.
        let compilation = [("Mix/a.flac", "Second Disc Song", "Artist B", 2), ("Mix/b.flac", "First Disc Song", "Artist A", 1)]
        for (index, song) in compilation.enumerated() {
            let plain = directory.appendingPathComponent("plain\(index).flac")
            try writeTone(to: plain, hz: 800 + 100 * Double(index), seconds: 1, title: song.1, artist: song.2, album: "Mix", trackNumber: 1)
            let url = music.appendingPathComponent(song.0)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try encodeWithFFmpeg(plain, to: url, codec: "copy", arguments: ["-metadata", "album_artist=Various Artists",
                                                                            "-metadata", "disc=\(song.3)"])
        }

        // The oracle: MPD with this folder as its music directory, on a socket of its own.
        let mpdFolder = directory.appendingPathComponent("mpd")
        try FileManager.default.createDirectory(at: mpdFolder, withIntermediateDirectories: true)
        let mpdSocket = mpdFolder.appendingPathComponent("socket").path
        let configuration = mpdFolder.appendingPathComponent("mpd.conf")
        try """
        music_directory "\(music.path)"
        db_file "\(mpdFolder.appendingPathComponent("db").path)"
        pid_file "\(mpdFolder.appendingPathComponent("pid").path)"
        bind_to_address "\(mpdSocket)"
        audio_output {
            type "null"
            name "null"
        }
        """.write(to: configuration, atomically: true, encoding: .utf8)
        let mpd = try spawnProcess(["/usr/bin/mpd", "--no-daemon", configuration.path], environment: ProcessInfo.processInfo.environment,
                                   outputPath: mpdFolder.appendingPathComponent("log").path, newSession: false).get()
        addTeardownBlock { kill(mpd, SIGTERM); var status: Int32 = 0; waitpid(mpd, &status, 0) }
        let deadline = Date(timeIntervalSinceNow: 10)
        while !FileManager.default.fileExists(atPath: mpdSocket) && Date() < deadline { usleep(10_000) }
        XCTAssertEqual(try runTool("/usr/bin/mpc", ["update", "--wait"], environment: ["MPD_HOST": mpdSocket]).code, 0)

        // musickitd with the same folder scanned into its library.
        var environment = folders
        environment["MUSICKIT_AUTHORIZATION"] = "authorized"
        environment["MUSICKIT_AUDIO_DEVICE"] = "null"
        func musickit(_ arguments: [String]) throws -> (code: Int32, out: String) {
            try runTool(CommandLineTests.executable.path, arguments, environment: ProcessInfo.processInfo.environment.merging(environment) { $1 })
        }
        XCTAssertEqual(try musickit(["library", "scan", music.path]).code, 0)
        XCTAssertEqual(try musickit(["daemon", "start"]).code, 0)
        addTeardownBlock { _ = try? musickit(["daemon", "stop"]) }
        let ours = try MPDSocket(path: directory.appendingPathComponent("runtime/mpd.sock").path)
        let theirs = try MPDSocket(path: mpdSocket)
        _ = ours.greeting()
        _ = theirs.greeting()

        let musicPrefix = music.standardizedFileURL.path + "/"
        /// The answer's songs (each as its file and compared tags), folders, and other lines.
        func normalized(_ answer: String) -> [String] {
            var lines: [String] = []
            var song: [String] = []
            func endSong() { if !song.isEmpty { lines.append(song.sorted().joined(separator: " | ")) }; song = [] }
            for line in answer.split(separator: "\n").map(String.init) {
                guard let colon = line.range(of: ": ") else { endSong(); lines.append(line); continue }
                let key = String(line[..<colon.lowerBound])
                var value = String(line[colon.upperBound...])
                switch key {
                case "file":
                    endSong()
                    if value.hasPrefix(musicPrefix) { value.removeFirst(musicPrefix.count) }
                    song = ["file: \(value)"]
                case _ where Self.comparedKeys.contains(key): song.append("\(key): \(value)")
                case "Last-Modified", "Format", "duration": break  // not kept by musickitd's library
                default: endSong(); lines.append(line)
                }
            }
            endSong()
            return lines
        }

        let sameAnswers = ["lsinfo", "lsinfo \"The Breeze\"", "lsinfo \"The Breeze/Weather\"", "find artist \"The Breeze\"",
                           "find album \"Weather\" track \"2\"", "search title \"ZEPH\"", "search any \"breeze\"",
                           "find artist \"Solo Artist\" album \"Single\"", "count artist \"The Breeze\"",
                           "find artist \"Nobody\"", "lsinfo \"No Such Folder\"", "list album \"The Breeze\"",
                           "list album artist \"The Breeze\"", "list title album \"Weather\"",
                           "find albumartist \"Various Artists\"", "find album \"Mix\" disc \"2\"", "list album albumartist \"Various Artists\"",
                           "find albumartist \"The Breeze\" album \"Seasons\"", "lsinfo \"Mix\""]
        for command in sameAnswers {
            let expected = normalized(theirs.exchange(command + "\n"))
            XCTAssertEqual(normalized(ours.exchange(command + "\n")), expected, command)
        }
        // A song's URI as MPD gives it (relative to the music folder; a colon in a name is no
        // scheme) is taken by both.
        for relative in ["add \"The Breeze/Weather/2 - Arctic.flac\"\n", "add \"Solo/alone: live.flac\"\n"] {
            XCTAssertEqual(theirs.exchange(relative), "OK\n", relative)
            XCTAssertEqual(ours.exchange(relative), "OK\n", relative)
        }
        XCTAssertEqual(normalized(ours.exchange("playlistinfo\n")).filter { !$0.hasPrefix("Id: ") },
                       normalized(theirs.exchange("playlistinfo\n")).filter { !$0.hasPrefix("Id: ") }, "the queued song")

        // musickitd's database also holds the bundled catalog: MPD's values, in MPD's order, among them.
        for command in ["list artist", "list album", "list albumartist"] {
            let expected = theirs.exchange(command + "\n").split(separator: "\n")
            let answered = ours.exchange(command + "\n").split(separator: "\n")
            XCTAssertGreaterThan(expected.count, 2, command)
            XCTAssertEqual(answered.filter { expected.contains($0) }, expected, command)
        }
    }
}
